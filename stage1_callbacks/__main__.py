"""``python -m stage1_callbacks [ROOT ...]``: crawl with callbacks on a hand-made event loop."""

from shared import interrupt

if __name__ == "__main__":
    interrupt.run_stage("stage1_callbacks")  # takes Ctrl-C over before anything slow is imported
