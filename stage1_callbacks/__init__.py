"""Stage 1 of 3: callbacks on a hand-made event loop.

Chapter: "Async" and "Programming With Callbacks".  Non-blocking sockets, a
selector and a loop that runs the callback stored with each ready socket: enough to
crawl many pages at once on one thread.  It shows the price the chapter names: a
fetch's state is saved by hand in a Fetcher's attributes, its continuation is the
next callback it registers, and an exception's traceback starts in the loop, not
where the fetch began ("stack ripping").  loop.py is the loop; crawler.py the crawler.
"""

from shared import lazy_exports

# Crawler and crawl, imported on first use: see lazy_exports.
__getattr__ = lazy_exports("stage1_callbacks.crawler", ["Crawler", "crawl"])
