"""``python -m stage3_asyncio [ROOT ...]``: crawl with asyncio and aiohttp."""

import sys

from shared.cli import main
from stage3_asyncio.crawler import crawl

if __name__ == "__main__":
    sys.exit(main("stage3_asyncio", crawl))
