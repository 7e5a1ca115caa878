"""``python -m stage1_callbacks [ROOT ...]``: crawl with callbacks on a hand-made event loop."""

from shared.tools.run_stage import run_stage

# No `if __name__ == "__main__":` here: this file runs only as `python -m stage1_callbacks`, and
# the Python documentation's idiom for a package's __main__.py is to leave it out.
run_stage("stage1_callbacks")  # Ctrl-C is taken over first of all: shared/interrupt.py
