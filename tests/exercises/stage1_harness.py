"""The stage 1 tests' common harness: a watched loop, a deadline for crawls, a Crawler to drive.

Listed as ``support`` in each stage 1 exercise, so a workspace has it beside the tests;
tests/test_stage1_loop.py uses it too.  Stage 1's loop runs in the test's own thread and
hands every Exception of a callback to its handler, so a crawl that never ends would
hang the test: :func:`watch_crawls` gives each crawl a deadline that raises through the
loop, and keeps each loop for the test to look at afterwards.
"""

from __future__ import annotations

import socket
from collections import defaultdict, deque
from typing import Any

import pytest
from reasons import reason

from shared.crawling import Options
from shared.report import CrawlResult, FetchStatistic
from stage1_callbacks import crawler as stage1_crawler
from stage1_callbacks.crawler import Crawler, Fetcher
from stage1_callbacks.loop import Callback, EventLoop

CRAWL_LIMIT_S = 8.0  # far above what a right answer takes; a wrong one may wait forever


class CrawlTooLong(BaseException):
    """Raised out of a crawl's loop when its deadline passes.

    A BaseException, like KeyboardInterrupt, so that no handler for callbacks' errors
    can swallow it: the loop lets it through, and the test fails with its message.
    """


class WatchedLoop(EventLoop):
    """An EventLoop that remembers every socket registered with it, and what was left."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sockets: list[socket.socket] = []
        self.left_registered: dict[int, Any] | None = None

    def expire_after(self, limit: float, why: str = "") -> None:
        """Raise CrawlTooLong out of the loop after ``limit`` seconds, saying ``why`` too."""
        message = (
            reason("harness.crawl-too-long", limit=limit, why=why)
            if why
            else reason("harness.crawl-too-long-alone", limit=limit)
        )

        def expire() -> None:
            raise CrawlTooLong(message)

        self.call_later(limit, expire)

    def register(self, sock: socket.socket, events: int, callback: Callback) -> None:
        # Only the crawl's own: the socket the loop watches for Ctrl-C is a Unix socket.
        if sock not in self.sockets and sock.family != socket.AF_UNIX:
            self.sockets.append(sock)
        super().register(sock, events, callback)

    def close(self) -> None:
        self.left_registered = dict(self.selector.get_map())
        super().close()


def watch_crawls(
    monkeypatch: pytest.MonkeyPatch, limit: float | None = None, why: str = ""
) -> list[WatchedLoop]:
    """Make every loop stage 1's crawler makes a WatchedLoop; return them, one per crawl.

    With a ``limit``, each crawl ends with CrawlTooLong after that many seconds, its
    message ending with ``why``: what a crawl that never ends most likely forgot.
    """
    made: list[WatchedLoop] = []

    def make(*args: Any, **kwargs: Any) -> WatchedLoop:
        loop = WatchedLoop(*args, **kwargs)
        if limit is not None:
            loop.expire_after(limit, why)
        made.append(loop)
        return loop

    monkeypatch.setattr(stage1_crawler, "EventLoop", make)
    return made


class Harness(Crawler):
    """A stage 1 Crawler set up as crawl() sets it up, its queue empty, for a test to drive.

    Its loop is :meth:`make_loop`'s: by default, one whose exceptions go to
    callback_failed, as a crawl's do.  Nothing runs until the test turns the loop.
    """

    def __init__(self, url: str, options: Options) -> None:
        super().__init__([url], options)
        self.loop = self.make_loop()
        self.q: deque[tuple[str, int]] = deque()
        self.fetchers: dict[str, Fetcher] = {}
        self.parked: dict[str, list[tuple[str, int]]] = {}
        self.host_lines: dict[str, deque[tuple[str, int]]] = defaultdict(deque)
        self.interrupted = False

    def make_loop(self) -> EventLoop:
        """The loop the test turns."""
        return EventLoop(self.callback_failed)


def by_path(result: CrawlResult, base: str) -> dict[str, FetchStatistic]:
    """The records of a crawl, by path."""
    return {stat.url.removeprefix(base[:-1]): stat for stat in result.fetches}
