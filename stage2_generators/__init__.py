"""Stage 2 of 3: generator coroutines on a hand-made framework named after asyncio's modules."""

from shared import lazy_exports

# Crawler and crawl, imported on first use: see lazy_exports.
__getattr__ = lazy_exports("stage2_generators.crawler", ["Crawler", "crawl"])
