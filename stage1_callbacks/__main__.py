"""``python -m stage1_callbacks [ROOT ...]``: crawl with callbacks on a hand-made event loop."""

from shared import run_stage

if __name__ == "__main__":
    run_stage("stage1_callbacks")  # Ctrl-C is taken over first of all: shared/interrupt.py
