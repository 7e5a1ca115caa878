"""``python -m stage3_asyncio [ROOT ...]``: crawl with asyncio and aiohttp."""

from shared import run_stage

if __name__ == "__main__":
    run_stage("stage3_asyncio")  # Ctrl-C is taken over first of all: shared/interrupt.py
