"""Watching a crawl: the one way a tool hears what a crawl does, while it does it.

A stage is a lesson and has no line for its instruments.  Yet ``--trace`` prints each
step of the event loop, ``--timeline`` notes when each fetch was queued, began, had its
connection and ended, and the show page draws the loop at every step.  They all listen to
the same few sentences, told to an :class:`Observer`:

* the event loop, once per step: stage 1's loop is about to run a callback, stage 2's
  Task is about to resume its coroutine.  Stage 3's Task is asyncio's, written in C, with
  no step for us to hear: shared/tools/instruments/trace.py follows its coroutine frames
  instead, and aiohttp, which connects out of sight, tells the trace configs an observer
  hands its session (:meth:`Observer.session_traces`);
* the story of the crawl: it begins, a URL is queued, a fetch starts, a try fails and
  another follows, the fetch is recorded, the crawl ends.

Why there and nowhere else: a stage's ``crawler.py`` is the lesson, and a line in it for
an instrument is a line a student reads for nothing.  So, as trio calls its instruments
from its run loop alone, the hand-made loops' steps and stage 3's session are the only
points that read :data:`observer`.  The story needs no point at all: every stage tells it
already to BaseCrawler (``begin``, ``record``, ``seen_urls``...), whose bookkeeping the
instruments wrap while they watch (shared/tools/instruments/story.py).  What a step does
not say, an instrument reads for itself: when a try has its connection, say, is the step
that runs a Fetcher's ``_on_connected``, or resumes ``sock_connect``, or aiohttp's word on
the connection (shared/tools/instruments/connections.py).  tests/test_layout.py holds that
no crawler.py, nor shared/crawling.py, names the observer.

Nobody listens by default: :data:`observer` is None, a loop's step costs one ``if`` that
fails, BaseCrawler runs unwrapped, and a crawl keeps no record beyond its result.  A tool
listens for the length of a ``with`` block, ``shared.tools.instruments.watching``: it
registers here (:func:`watching`) and wraps the story; what is made in the block takes the
observer of the moment: a crawler, a hand-made loop, stage 3's session.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.crawling import BaseCrawler
    from shared.report import CrawlResult


class Observer:
    """Someone watching a crawl.  Every method does nothing: a tool overrides those it needs.

    The methods are called as things happen, from the crawl's own thread.  One more kind
    of event (the task that created a task, for a tree of tasks) would be one more method
    here, and observers written before it would go on working.
    """

    def crawl_started(self, crawler: BaseCrawler) -> None:
        """A crawl is set up: its clock (``crawler.now()``) starts, its roots are queued."""

    def queued(self, url: str) -> None:
        """A URL was found (a link, a redirect's target) and waits in the queue."""

    def fetch_started(self, url: str) -> None:
        """A fetch of url begins: from now on it is in flight."""

    def retrying(self, url: str) -> None:
        """A try of url failed and another follows, on a new connection."""

    def fetch_finished(self, url: str) -> None:
        """url has its record: fetched, failed, or skipped before it began."""

    def crawl_finished(self, result: CrawlResult) -> None:
        """The crawl is over (or interrupted), and this is its result."""

    def callback(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Stage 1's loop is about to run ``callback(*args)``: ``(key, mask)`` for a socket."""

    def resume(self, task: Any, value: Any) -> None:
        """Stage 2's ``task`` is about to resume its coroutine with value (an exception: thrown)."""

    def session_traces(self) -> list[Any]:
        """Stage 3's aiohttp session opens: the ``aiohttp.TraceConfig`` list it should carry.

        Stage 3 has no loop of ours to hear: aiohttp connects inside ``session.get`` and
        tells its trace configs instead.  An observer that wants those events returns
        its own (shared/tools/instruments/aiohttp_traces.py makes them); none by default.
        """
        return []


class Chorus(Observer):
    """Several observers as one: each event goes to each of them, in order."""

    def __init__(self, observers: list[Observer]) -> None:
        """Tell every one of ``observers`` everything."""
        self.observers = observers

    def __getattribute__(self, name: str) -> Any:
        """An event method calls that method of every observer; other attributes are ours."""
        if name.startswith("_") or name in Chorus.__dict__ or not hasattr(Observer, name):
            return super().__getattribute__(name)
        observers = super().__getattribute__("observers")

        def tell_all(*args: Any) -> None:
            for one in observers:
                getattr(one, name)(*args)

        return tell_all

    def session_traces(self) -> list[Any]:
        """Every observer's trace configs, in order."""
        return [trace for one in self.observers for trace in one.session_traces()]


#: Whoever watches the crawls that begin now; None: nobody (see :func:`watching`).
observer: Observer | None = None


@contextlib.contextmanager
def watching(*observers: Observer) -> Iterator[None]:
    """Within the block, the loops made tell ``observers``, besides those already told.

    This registers them only: a tool watches with ``shared.tools.instruments.watching``,
    which calls this and also wraps BaseCrawler for the crawl's story.
    """
    global observer
    previous = observer
    chorus = [*([previous] if previous else []), *observers]
    observer = chorus[0] if len(chorus) == 1 else Chorus(chorus)
    try:
        yield
    finally:
        observer = previous
