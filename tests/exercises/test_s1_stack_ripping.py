"""Exercise s1-stack-ripping: what stage 1 does with an exception that escapes a callback.

Crawler.callback_failed is the loop's exception handler.  It gets the exception and the
callback that raised it, nothing more: whoever started the chain of callbacks returned
long ago.  Task 1 records the failure for the URL whose Fetcher it was and lets the
crawl go on; Task 2 logs it with its traceback, which begins in the loop; Task 3 raises
again what no Fetcher raised.

Crawls run against small servers on 127.0.0.1 and the test site of shared/testsite.py;
a bug is planted in the crawler with monkeypatch.
"""

from __future__ import annotations

import traceback
from dataclasses import replace
from typing import Any

import pytest
from reasons import reason
from stage1_harness import Harness, WatchedLoop, by_path, watch_crawls

import stage1_callbacks
from shared.crawling import CrawlResult, Options
from shared.log import ERROR, Record
from shared.testsite import Site
from shared.testsite.raw import closed_port_url, links, page, raw_server
from stage1_callbacks.crawler import Crawler, Fetcher

OPTIONS = Options(ignore_robots=True, timeout=1, max_tries=1)

# --- a small site, and watching the crawl's loop ------------------------------------------

PAGES = {"/": links("/a", "/b", "/c"), "/a": links("/e"), "/b": links("/d")}
CRAWL_LIMIT_S = 5.0  # far above what a right answer takes; a wrong one may wait forever


def crawl_pages(
    options: Options, stopped: str = "s1-stack-ripping.crawl-stopped"
) -> tuple[CrawlResult, str]:
    """Crawl PAGES (any other path a leaf) with stage 1; the result and the site's base URL.
    A RuntimeError out of crawl() fails the test with the ``stopped`` sentence."""
    with raw_server(lambda path: PAGES.get(path, page("<p>leaf</p>"))) as base:
        try:
            return stage1_callbacks.crawl([base], options), base
        except RuntimeError as exc:
            pytest.fail(reason(stopped, error=repr(exc)))


@pytest.fixture(autouse=True)
def loops(monkeypatch: pytest.MonkeyPatch) -> list[WatchedLoop]:
    """The loops the stage 1 crawler makes during the test (one per crawl), each with a
    deadline, rather than let a crawl hang."""
    return watch_crawls(monkeypatch, CRAWL_LIMIT_S, reason("s1-stack-ripping.never-finished"))


def plant_parse_bug(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Make link parsing raise RuntimeError("parse error") for URLs ending in path."""
    original = Crawler.parse_links

    def parse_links(self: Crawler, url: str, text: str) -> set[str]:
        if url.endswith(path):
            raise RuntimeError("parse error")
        return original(self, url, text)

    monkeypatch.setattr(Crawler, "parse_links", parse_links)


def plant_reader_bug(monkeypatch: pytest.MonkeyPatch, path: str, on_try: int = 1) -> None:
    """Make the Fetcher of URLs ending in path raise RuntimeError("reader bug") from its
    readable callback, its socket open, on try ``on_try`` (the tries before are reset)."""
    original = Fetcher._on_readable

    def on_readable(self: Fetcher, key: Any, mask: int) -> None:
        if self.url.endswith(path):
            if self.tries < on_try:
                self._fail(ConnectionResetError("reset by the test"))
                return
            raise RuntimeError("reader bug")
        original(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_readable", on_readable)


# --- Task 1: record it and go on ------------------------------------------------------------


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize("max_tasks", [1, 10])
def test_a_page_whose_parsing_raises_is_recorded_and_the_crawl_goes_on(
    monkeypatch: pytest.MonkeyPatch, loops: list[WatchedLoop], max_tasks: int
) -> None:
    """/b's links cannot be read: /b is a failed record, /d (linked from /b only) is never
    found, and every other page is crawled.  With one fetch at a time, only the failed
    fetch's way out through finished() can start the next."""
    plant_parse_bug(monkeypatch, "/b")
    result, base = crawl_pages(replace(OPTIONS, max_tasks=max_tasks))
    records = by_path(result, base)
    assert set(records) == {"/", "/a", "/b", "/c", "/e"}, reason(
        "s1-stack-ripping.the-crawl-recorded-the-other", value1=sorted(records)
    )
    failed = records["/b"]
    assert (failed.status, failed.error, failed.tries) == (None, "RuntimeError: parse error", 1), (
        reason("s1-stack-ripping.the-failed-page-was-recorded", failed=failed)
    )
    assert all(records[path].status == 200 for path in ("/", "/a", "/c", "/e")), reason(
        "s1-stack-ripping.a-page-other-than-the"
    )
    assert not result.interrupted, reason("s1-stack-ripping.the-crawl-was-interrupted")


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize("on_try", [1, 2])
def test_a_callback_that_raises_with_its_socket_open_has_its_try_closed(
    monkeypatch: pytest.MonkeyPatch, loops: list[WatchedLoop], on_try: int
) -> None:
    """The Fetcher raised before it could close its socket: callback_failed closes it.
    On a retry too (its first try lost to a reset): a bug is recorded as one try."""
    plant_reader_bug(monkeypatch, "/b", on_try)
    result, base = crawl_pages(
        replace(OPTIONS, max_tries=on_try), stopped="s1-stack-ripping.came-out"
    )
    assert len(result.fetches) == len(result.urls), reason(
        "s1-stack-ripping.a-url-was-recorded-twice"
    )
    records = by_path(result, base)
    assert set(records) == {"/", "/a", "/b", "/c", "/e"}, reason(
        "s1-stack-ripping.the-crawl-recorded", value1=sorted(records)
    )
    assert (records["/b"].error, records["/b"].tries) == ("RuntimeError: reader bug", 1), reason(
        "s1-stack-ripping.b-was-recorded-as-its", value1=records["/b"]
    )
    [loop] = loops
    assert loop.left_registered == {}, reason("s1-stack-ripping.a-socket-was-left-in")
    assert all(sock.fileno() == -1 for sock in loop.sockets), reason(
        "s1-stack-ripping.a-socket-was-left-open"
    )


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize("connect", ["refused", "accepted"])
def test_a_try_is_closed_whatever_step_raised(
    monkeypatch: pytest.MonkeyPatch, loops: list[WatchedLoop], connect: str
) -> None:
    """A bug in _on_connected, before the request is sent: the connect was refused (the
    socket never connected) or accepted.  Either way the socket is open and registered
    and the timer set, and callback_failed closes them all."""
    raised: list[Fetcher] = []

    def on_connected(self: Fetcher, key: Any, mask: int) -> None:
        raised.append(self)
        raise RuntimeError("connect bug")

    monkeypatch.setattr(Fetcher, "_on_connected", on_connected)
    with raw_server(lambda path: page("<p>leaf</p>")) as base:
        url = base if connect == "accepted" else closed_port_url()
        try:
            result = stage1_callbacks.crawl([url], OPTIONS)
        except RuntimeError as exc:
            pytest.fail(reason("s1-stack-ripping.came-out", error=repr(exc)))
    records = [(stat.url, stat.error, stat.tries) for stat in result.fetches]
    assert records == [(url, "RuntimeError: connect bug", 1)], reason(
        "s1-stack-ripping.the-crawl-recorded", value1=records
    )
    [loop], [fetcher] = loops, raised
    registered = len(loop.left_registered or {})
    still_open = sum(sock.fileno() != -1 for sock in loop.sockets)
    timer = fetcher.timer is not None and not fetcher.timer.cancelled()
    assert not (registered or still_open or timer), reason(
        "s1-stack-ripping.try-left-open", registered=registered, open=still_open, timer=timer
    )


@pytest.mark.task(taskno=1)
def test_fail_on_records_the_error_and_the_crawl_goes_on(default_site: tuple[Site, str]) -> None:
    """--fail-on, the switch for this demo: matching pages fail, the others are crawled."""
    site, base = default_site
    result = stage1_callbacks.crawl([base], Options(fail_on="/traps/"))
    failed = {s.url for s in result.fetches if s.error and "ParseError" in s.error}
    assert base + "traps/" in failed, reason(
        "s1-stack-ripping.traps-was-not-recorded-as", base=base
    )
    assert all(s.status is None and s.tries == 1 for s in result.fetches if s.url in failed), (
        reason("s1-stack-ripping.a-failed-page-must-be")
    )
    pages = {url for url in site.expected(base) if "/p/" in url}
    assert pages <= result.urls, reason("s1-stack-ripping.the-generated-pages-were-crawled")


@pytest.mark.task(taskno=1)
def test_a_robots_txt_whose_reading_raises_lets_its_pages_go_on(
    monkeypatch: pytest.MonkeyPatch, loops: list[WatchedLoop]
) -> None:
    """The bug hits robots.txt, which the site's pages wait for: the failed fetch leaves the
    crawl through finished(), which also gives back the pages parked behind it, so they
    are fetched and recorded as if robots.txt had failed on the network."""
    plant_reader_bug(monkeypatch, "/robots.txt")
    result, base = crawl_pages(replace(OPTIONS, ignore_robots=False))
    records = by_path(result, base)
    assert {"/", "/a", "/c", "/e"} <= set(records), reason(
        "s1-stack-ripping.parked-pages-lost", value1=sorted(records)
    )


# --- Task 2: say where ------------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_the_error_is_logged_with_its_url_and_its_traceback(
    monkeypatch: pytest.MonkeyPatch, logged: list[Record]
) -> None:
    """The log names the URL and carries the traceback, which begins in the loop."""
    plant_parse_bug(monkeypatch, "/b")
    with raw_server(lambda path: PAGES.get(path, page("<p>leaf</p>"))) as base:
        stage1_callbacks.crawl([base], OPTIONS)
    errors = [r for r in logged if r.level >= ERROR and isinstance(r.exc, RuntimeError)]
    assert errors, reason("s1-stack-ripping.no-error-was-logged-with")
    assert len(errors) == 1, reason("s1-stack-ripping.logged-more-than-once", count=len(errors))
    [record] = errors
    assert base + "b" in record.message, reason("s1-stack-ripping.the-message-names-the-url")
    assert record.exc is not None, reason("s1-stack-ripping.the-error-was-logged-without")
    frames = [frame.name for frame in traceback.extract_tb(record.exc.__traceback__)]
    # Stack ripping: the loop ran a callback; nothing of work() or fetch(), which began it.
    assert frames[0] == "_run", reason(
        "s1-stack-ripping.the-traceback-starts-in-not", value1=frames[0]
    )
    assert "work" not in frames and "fetch" not in frames, reason(
        "s1-stack-ripping.the-traceback-shows-the-loop", frames=frames
    )


# --- Task 3: what no Fetcher raised -------------------------------------------------------


class BuggyCrawler(Harness):
    """A crawler with a bug in a method of its own, which the loop runs (as it runs cancel)."""

    def own_bug(self) -> None:
        """Raise, as a bug in the crawler's own code would."""
        raise ValueError("crawler bug")


@pytest.mark.task(taskno=3)
@pytest.mark.parametrize("whose", ["a-plain-function", "a-method-of-the-crawler"])
def test_an_exception_in_a_callback_of_no_fetcher_is_raised_again(whose: str) -> None:
    """A bug in the crawler itself must stop the crawl, not vanish into a record; a bound
    method has a __self__ too, but only a Fetcher's names a URL."""
    crawler = BuggyCrawler("http://127.0.0.1:9/", OPTIONS)

    def crawler_bug() -> None:
        raise ValueError("crawler bug")

    crawler.loop.call_soon(crawler_bug if whose == "a-plain-function" else crawler.own_bug)
    try:
        with pytest.raises(ValueError, match="crawler bug"):
            crawler.loop.run_once()
    except Exception as exc:  # the handler raised something else than the crawler's bug
        pytest.fail(reason("s1-stack-ripping.bug-replaced", error=repr(exc)))
    finally:
        crawler.loop.close()
    assert not crawler.result().fetches, reason("s1-stack-ripping.nothing-is-recorded-for-it")


@pytest.mark.task(taskno=3)
def test_an_exception_from_a_fetcher_no_longer_in_flight_is_raised_again() -> None:
    """Its URL has a record already (or never will): recording it again would be wrong."""
    url = "http://127.0.0.1:9/"
    crawler = Harness(url, OPTIONS)
    fetcher = Fetcher(crawler, url, 10)  # not in crawler.fetchers
    try:
        crawler.callback_failed(ValueError("late"), fetcher._on_readable)
    except ValueError:
        pass
    except Exception as exc:
        pytest.fail(reason("s1-stack-ripping.recorded-twice", error=repr(exc)))
    else:
        pytest.fail(reason("s1-stack-ripping.callback-failed-swallowed-the-error"))
    finally:
        crawler.loop.close()
    assert not crawler.result().fetches, reason("s1-stack-ripping.a-fetcher-no-longer-in")
