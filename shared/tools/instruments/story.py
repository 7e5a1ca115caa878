"""The story of a crawl, read from BaseCrawler's bookkeeping while someone watches.

A crawl begins, a URL is queued, a fetch starts, a try fails and another follows, the
fetch is recorded, the crawl ends: every stage says each of these by calling one method of
:class:`shared.crawling.BaseCrawler` (``__init__``, ``begin``, ``retrying``, ``record``,
``result``) or by adding a URL to its ``seen_urls``.  So the crawler need not tell anyone:
:func:`telling_the_story` wraps those methods, at class level, for the length of a watch,
and the wrappers tell the observer of the moment (:data:`shared.observe.observer`).
Outside the block BaseCrawler is what it always is; nothing of this runs.

A crawler keeps the observer that watched it begin, as a loop does, so a crawl goes on
telling whoever watched it even if it outlives the block.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from shared import observe
from shared.crawling import BaseCrawler
from shared.observe import Observer
from shared.report import CrawlResult, FetchStatistic


class QueuedSet(set[str]):
    """A crawl's ``seen_urls`` that tells its observer of each URL it had not seen.

    BaseCrawler adds a URL to ``seen_urls`` when it queues it (a new link, a redirect's
    target), so adding one the set lacks is queueing it.  The roots, there from the start,
    are queued by ``crawl_started``; a robots.txt is begun at once, never queued.
    """

    def __init__(self, urls: Iterable[str], observer: Observer) -> None:
        """The URLs seen so far, without telling; later ones are told to observer."""
        super().__init__(urls)
        self.observer = observer

    def add(self, url: str) -> None:
        """Add url; if it is new, it is queued."""
        new = url not in self
        super().add(url)
        if new:
            self.observer.queued(url)

    def update(self, *groups: Iterable[str]) -> None:
        """Add each URL of groups, in their order: each new one is queued."""
        for group in groups:
            for url in group:
                self.add(url)

    def add_quietly(self, url: str) -> None:
        """Add url without a word: a robots.txt, fetched as soon as it is seen."""
        super().add(url)


#: Each watched crawler and its observer; a crawler nobody watched is not in it.
WATCHERS: weakref.WeakKeyDictionary[BaseCrawler, Observer] = weakref.WeakKeyDictionary()


def watcher(crawler: BaseCrawler) -> Observer | None:
    """The observer that watched crawler begin; None: nobody."""
    return WATCHERS.get(crawler)


def init(original: Callable[..., None]) -> Callable[..., None]:
    """The crawl is set up: its observer hears it begin and each URL it queues."""

    def __init__(self: BaseCrawler, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        observer = observe.observer
        if observer is not None:
            WATCHERS[self] = observer
            self.seen_urls = QueuedSet(self.seen_urls, observer)
            observer.crawl_started(self)

    return __init__


def begin_robots(original: Callable[[BaseCrawler, str], None]) -> Callable[..., None]:
    """A robots.txt is begun as soon as it is seen: started, never queued."""

    def begin_robots(self: BaseCrawler, url: str) -> None:
        observer = watcher(self)
        if isinstance(self.seen_urls, QueuedSet):
            self.seen_urls.add_quietly(url)
        original(self, url)
        if observer is not None:
            observer.fetch_started(url)

    return begin_robots


def begin(original: Callable[[BaseCrawler, str], bool]) -> Callable[..., bool]:
    """A URL claimed for fetching has its fetch started."""

    def begin(self: BaseCrawler, url: str) -> bool:
        claimed = original(self, url)
        observer = watcher(self)
        if claimed and observer is not None:
            observer.fetch_started(url)
        return claimed

    return begin


def record(original: Callable[[BaseCrawler, FetchStatistic], None]) -> Callable[..., None]:
    """A URL with its record has finished."""

    def record(self: BaseCrawler, stat: FetchStatistic) -> None:
        original(self, stat)
        if (observer := watcher(self)) is not None:
            observer.fetch_finished(stat.url)

    return record


def retrying(original: Callable[..., None]) -> Callable[..., None]:
    """A failed try that another follows."""

    def retrying(self: BaseCrawler, url: str, tries: int, exc: BaseException) -> None:
        if (observer := watcher(self)) is not None:
            observer.retrying(url)
        original(self, url, tries, exc)

    return retrying


def result(original: Callable[..., CrawlResult]) -> Callable[..., CrawlResult]:
    """The crawl's result: it is over."""

    def result(self: BaseCrawler, **kwargs: Any) -> CrawlResult:
        outcome = original(self, **kwargs)
        if (observer := watcher(self)) is not None:
            observer.crawl_finished(outcome)
        return outcome

    return result


#: BaseCrawler's methods that tell the story, each with the wrapper that tells it.
WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "__init__": init,
    "begin_robots": begin_robots,
    "begin": begin,
    "record": record,
    "retrying": retrying,
    "result": result,
}

#: How many watches are open: the first wraps BaseCrawler, the last unwraps it.
_depth = 0


@contextlib.contextmanager
def telling_the_story() -> Iterator[None]:
    """Within the block, each crawl that begins while someone watches tells them its story.

    Blocks may nest: BaseCrawler is wrapped once, by the outermost, and restored when it ends.
    """
    global _depth
    originals = {name: BaseCrawler.__dict__[name] for name in WRAPPERS} if not _depth else {}
    for name, wrap in WRAPPERS.items() if originals else ():
        setattr(BaseCrawler, name, wrap(originals[name]))
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        for name, method in originals.items():
            setattr(BaseCrawler, name, method)
