"""``python -m stage2_generators [ROOT ...]``: crawl with hand-made generator coroutines."""

from shared import run_stage

if __name__ == "__main__":
    run_stage("stage2_generators")  # Ctrl-C is taken over first of all: shared/interrupt.py
