"""``python -m stage3_asyncio [ROOT ...]``: crawl with asyncio and aiohttp."""

from shared.tools.run_stage import run_stage

# No `if __name__ == "__main__":` here: this file runs only as `python -m stage3_asyncio`, and
# the Python documentation's idiom for a package's __main__.py is to leave it out.
run_stage("stage3_asyncio")  # Ctrl-C is taken over first of all: shared/interrupt.py
