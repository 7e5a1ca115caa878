"""Stage 2 of 3: generator coroutines driven by a hand-made Task."""

# Chapter: "Building Coroutines With Generators", "Factoring Coroutines With yield from" and
# "Coordinating Coroutines". Changed from stage 1: callbacks -> generators.
#
# The framework, named after the asyncio modules it imitates: loop.py (EventLoop),
# futures.py (Future), tasks.py (Task, sleep, timeout), sockets.py (sock_connect,
# sock_handshake, sock_sendall, sock_recv) and queues.py (Queue). None of it imports asyncio.
# crawler.py is the crawler itself, in the shape of stage 3's.

from shared import lazy_exports

# Crawler and crawl, imported on first use: see lazy_exports.
__getattr__ = lazy_exports("stage2_generators.crawler", ["Crawler", "crawl"])
