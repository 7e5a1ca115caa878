"""``python -m stage3_asyncio [ROOT ...]``: crawl with asyncio and aiohttp."""

from shared import interrupt

if __name__ == "__main__":
    interrupt.run_stage("stage3_asyncio")  # takes Ctrl-C over before anything slow is imported
