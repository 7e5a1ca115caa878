"""``python -m stage2_generators [ROOT ...]``: crawl with hand-made generator coroutines."""

from shared import interrupt

if __name__ == "__main__":
    interrupt.run_stage("stage2_generators")  # takes Ctrl-C over before anything slow is imported
