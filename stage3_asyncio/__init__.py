"""Stage 3 of 3: the crawler on asyncio, with async/await and aiohttp.

Chapter: "Coordinating Coroutines".  Changed from stage 2: our hand-made Future,
Task, event loop and queue give way to asyncio's, ``yield from`` becomes ``await``,
and aiohttp speaks HTTP in place of shared/httpwire.py.
"""

from shared import lazy_exports

# Crawler and crawl, imported on first use: see lazy_exports.
__getattr__ = lazy_exports("stage3_asyncio.crawler", ["Crawler", "crawl"])
