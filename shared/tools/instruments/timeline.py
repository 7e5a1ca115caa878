"""--timeline: when each fetch was queued, began, had its connection and ended.

An :class:`~shared.observe.Observer`: a crawl that nobody times keeps none of this.  When a
try has its connection it learns as connections.py says.  The
JSON a crawl writes with ``--timeline`` gets two lists, one entry per URL recorded, in
the order they were recorded: ``timeline``, ``[url, start, end]``, and ``phases``,
``[url, queued, connected]``, in seconds since the crawl began.  ``queued`` is when the
URL was found (a root: 0), ``connected`` when its last try had its connection (null if it
never had one).  They are the raw data of the comparison's pictures (shared/tools/bench).
Beside them, ``cpu_s``: the CPU time the process spent from the crawl's start to its end,
the same span as ``elapsed_s`` (the benchmark's S2 compares the two).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from shared.tools.instruments.connections import Connections

if TYPE_CHECKING:
    from shared.crawling import BaseCrawler
    from shared.report import CrawlResult


class Timeline(Connections):
    """Note the times of each fetch of the crawls it watches, by the crawl's own clock."""

    def __init__(self) -> None:
        """Start with nothing noted; every crawl watched adds to the same lists."""
        self.crawler: BaseCrawler | None = None
        self.timeline: list[tuple[str, float, float]] = []
        self.phases: list[tuple[str, float, float | None]] = []
        # Kept only while a URL waits or is in flight: popped when it is recorded.
        self.queued_at: dict[str, float] = {}
        self.started_at: dict[str, float] = {}
        self.connected_at: dict[str, float] = {}
        self.cpu_started = self.cpu_s = 0.0  # process CPU time at the start; spent by the end

    def now(self) -> float:
        """Seconds since the watched crawl began."""
        assert self.crawler is not None, "no crawl has started"
        return self.crawler.now()

    def crawl_started(self, crawler: BaseCrawler) -> None:
        """The roots are queued when the crawl begins, at 0."""
        self.crawler = crawler
        self.cpu_started = time.process_time()
        self.queued_at.update(dict.fromkeys(crawler.roots, 0.0))

    def queued(self, url: str) -> None:
        """Note when a URL was found."""
        self.queued_at[url] = self.now()

    def fetch_started(self, url: str) -> None:
        """Note when a fetch began."""
        self.started_at[url] = self.now()

    def connected(self, url: str) -> None:
        """Note when the current try had its connection."""
        if url in self.started_at:  # a URL aiohttp spells otherwise is not ours: ignore it
            self.connected_at[url] = self.now()

    def retrying(self, url: str) -> None:
        """Forget the failed try's connection: the next try connects anew."""
        self.connected_at.pop(url, None)

    def fetch_finished(self, url: str) -> None:
        """Put the URL on the timeline: begun, ended, queued, connected."""
        end = self.now()
        start = self.started_at.pop(url, end)  # skipped before it began: no time at all
        self.timeline.append((url, start, end))
        queued = self.queued_at.pop(url, start)  # a robots.txt is begun when it is queued
        self.phases.append((url, queued, self.connected_at.pop(url, None)))

    def crawl_finished(self, result: CrawlResult) -> None:
        """Note the CPU the crawl took, over the span of its ``elapsed_s``."""
        self.cpu_s = time.process_time() - self.cpu_started

    def to_json(self) -> dict[str, Any]:
        """The two lists and the CPU, as --timeline adds them to a crawl's JSON."""
        return {
            "cpu_s": round(self.cpu_s, 6),
            "timeline": [[url, round(a, 6), round(b, 6)] for url, a, b in self.timeline],
            "phases": [
                [url, round(queued, 6), None if connected is None else round(connected, 6)]
                for url, queued, connected in self.phases
            ],
        }
