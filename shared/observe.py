"""Watching a crawl: the one way a tool hears what a crawl does, while it does it.

A stage is a lesson and has no line for its instruments.  Yet ``--trace`` prints each
step of the event loop, ``--timeline`` notes when each fetch was queued, began, had its
connection and ended, and the show page draws the loop at every step.  They all listen to
the same few sentences of the story, told to an :class:`Observer`:

* the crawler (BaseCrawler says most of these itself): a crawl begins, a URL is queued, a
  fetch starts, its try has its connection, a try fails and another follows, the fetch is
  recorded, the crawl ends;
* the event loop, once per step: stage 1's loop is about to run a callback, stage 2's
  Task is about to resume its coroutine.  Stage 3's Task is asyncio's, written in C, with
  no step for us to hear: shared/tools/instruments/trace.py follows its coroutine frames instead.

Nobody listens by default: :data:`observer` is None, each sentence costs one ``if`` that
fails, and a crawl keeps no record beyond its result.  A tool listens for the length of a
``with`` block, :func:`watching`; each crawl that begins in the block takes the observer
with it (``crawler.observer``), and hands it to its loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

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

    def connected(self, url: str) -> None:
        """The current try of url has its connection: connecting is over, reading begins."""

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


class Chorus(Observer):
    """Several observers as one: each event goes to each of them, in order."""

    def __init__(self, observers: list[Observer]) -> None:
        """Tell every one of ``observers`` everything."""
        self.observers = observers

    def __getattribute__(self, name: str) -> Any:
        """An event method calls that method of every observer; other attributes are ours."""
        if name.startswith("_") or not hasattr(Observer, name):
            return super().__getattribute__(name)
        observers = super().__getattribute__("observers")

        def tell_all(*args: Any) -> None:
            for one in observers:
                getattr(one, name)(*args)

        return tell_all


#: Whoever watches the crawls that begin now; None: nobody (see :func:`watching`).
observer: Observer | None = None


@contextlib.contextmanager
def watching(*observers: Observer) -> Iterator[None]:
    """Within the block, each crawl that begins tells ``observers``, besides those already told."""
    global observer
    previous = observer
    chorus = [*([previous] if previous else []), *observers]
    observer = chorus[0] if len(chorus) == 1 else Chorus(chorus)
    try:
        yield
    finally:
        observer = previous


def connection_traces(listener: Observer | None) -> list[aiohttp.TraceConfig]:
    """For stage 3's session: aiohttp trace configs that tell ``listener`` of each connection.

    aiohttp connects inside ``session.get``, out of the crawler's sight, and tells its
    trace configs when a request has its connection (a new one, its TLS handshake done,
    or one taken from the pool).  Nobody listening: no trace config at all.
    """
    if listener is None:
        return []
    import aiohttp  # stage 3's library: loaded only by the stage that asks

    async def request_start(_: object, ctx: Any, params: Any) -> None:
        ctx.url = str(params.url)  # ctx is this request's own, for the events below

    async def connection_ready(_: object, ctx: Any, __: object) -> None:
        listener.connected(ctx.url)

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(request_start)
    trace.on_connection_create_end.append(connection_ready)
    trace.on_connection_reuseconn.append(connection_ready)
    return [trace]
