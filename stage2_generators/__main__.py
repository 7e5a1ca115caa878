"""``python -m stage2_generators [ROOT ...]``: crawl with hand-made generator coroutines."""

from shared.tools.run_stage import run_stage

# No `if __name__ == "__main__":` here: this file runs only as `python -m stage2_generators`, and
# the Python documentation's idiom for a package's __main__.py is to leave it out.
run_stage("stage2_generators")  # Ctrl-C is taken over first of all: shared/interrupt.py
