"""Exercise s2-crawl: workers at a queue, and a crawl that joins it, then cancels them.

Task 1 is stage 2's `Crawler.crawl`, tested with stand-in workers of our own; task 2 is
`Crawler.work`, tested by whole crawls of the test site, which must equal its oracle
(see shared/tools/exercises/s2-crawl/README.md). Each test drives a fresh stage 2 EventLoop
for a limited time, so a crawl that never ends fails instead of hanging.
"""

from __future__ import annotations

import time
from typing import TypeVar

import pytest
from reasons import reason
from stage2_loop import loop_fixture, raises, run  # noqa: F401 (the fixture `loop`)

from shared.crawling import Options, ParseError
from shared.report import CrawlResult
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle
from stage2_generators.crawler import Crawler
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task, sleep

T = TypeVar("T")
CRAWL_LIMIT_S = 30.0  # the default site takes one or two seconds


class Watched(Crawler):
    """The crawler under test, noting each exception that ends a worker (none should)."""

    def __init__(self, roots: list[str], options: Options | None = None) -> None:
        super().__init__(roots, options)
        self.worker_errors: list[Exception] = []
        self.bugs: list[tuple[str, Exception]] = []  # what record_bug was given

    def record_bug(self, url: str, exc: Exception) -> None:
        """BaseCrawler.record_bug, watched."""
        self.bugs.append((url, exc))
        super().record_bug(url, exc)

    def work(self) -> Coroutine[None]:
        """Crawler.work, watched."""
        try:
            yield from super().work()
        except Exception as exc:
            self.worker_errors.append(exc)
            raise

    def news(self) -> str:
        """The first exception that ended a worker, as a cause of the failure ("" if none)."""
        if not self.worker_errors:
            return ""
        return reason("s2-crawl.worker-ended", error=error_text(self.worker_errors[0]))

    def stuck(self) -> str:
        """Why a crawl may never end, as a cause of the failure."""
        return self.news() or reason("s2-crawl.never-ended")


def crawl(loop: EventLoop, crawler: Watched) -> CrawlResult:
    """Run the crawler's crawl() on `loop` to its end and return its result."""
    try:
        run(loop, crawler.crawl(), limit=CRAWL_LIMIT_S, explain=crawler.stuck)
    except Exception as error:  # crawl() waits for each worker: one that failed raises here
        why = crawler.news() or reason("s2-crawl.crawl-raised", error=error_text(error))
        pytest.fail(why)
    except CancelledError:  # nobody cancels this crawl: the CancelledError came from within
        why = crawler.news() or reason("s2-crawl.cancelled-from-within")
        pytest.fail(why)
    return crawler.result()


def error_text(error: BaseException) -> str:
    """An exception as a cause says it: its type, and its words if it has some."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


SHARED = ("q", "robots_tasks", "host_slots")  # what crawl() prepares for the workers
NEVER_ENDED = reason("s2-crawl.never-returned")
#: Far more than a crawl of the stand-in's few short items takes, even on a busy machine.
AFTER_THE_WORK_S = 0.5


def crawl_stand_in(loop: EventLoop, crawler: Crawler) -> None:
    """Run a stand-in crawler's crawl(), saying what crawl() must do if it never ends."""
    try:
        run(loop, crawler.crawl(), explain=lambda: NEVER_ENDED)
    except CancelledError:  # nobody cancels this crawl: the CancelledError came from within
        pytest.fail(reason("s2-crawl.cancelled-from-within"))


class StandIn(Crawler):
    """A crawler whose workers fetch nothing: each item is "done" after a short sleep.

    An item (url, n) leads to two more, (url + "a", n - 1) and (url + "b", n - 1), until n
    is 0. The workers note when they start and stop, and what they finished.
    """

    def __init__(self, roots: list[str], options: Options, item_time: float = 0.002) -> None:
        super().__init__(roots, options)
        self.item_time = item_time
        self.started = self.stopped = 0
        self.finished: list[str] = []
        self.shared: list[tuple[str, ...]] = []  # the types of SHARED, as each worker saw them
        self.robots_known: list[object] = []  # self.robots_tasks, as each worker saw it

    def work(self) -> Coroutine[None]:
        """Take items from self.q and "fetch" them, until cancelled."""
        index = self.started  # worker-0 is the first to run
        self.started += 1
        self.shared.append(tuple(type(getattr(self, name, None)).__name__ for name in SHARED))
        self.robots_known.append(getattr(self, "robots_tasks", None))
        try:
            while True:
                url, left = yield from self.q.get()
                try:
                    yield from sleep(self.item_time)
                    self.finished.append(url)
                    if left > 0:
                        self.q.put_nowait((url + "a", left - 1))
                        self.q.put_nowait((url + "b", left - 1))
                finally:
                    self.q.task_done()
        except GeneratorExit:
            # Closed, not cancelled: a crawl that left this worker pending ended, and its
            # loop with it, so there are no turns left to take (nor a worker to count).
            raise
        except BaseException:
            # A clean-up that takes a while, as closing a connection may: some loop turns,
            # more for the workers between the first and the last, so that crawl() returns
            # after all of them only if it waits for each one.
            turns = 1 if index in (0, self.max_tasks - 1) else 10
            for _ in range(turns):
                yield from sleep(0)
            self.stopped += 1
            raise


# --- Task 1: Crawler.crawl ----------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_crawl_runs_max_tasks_workers_until_all_the_work_is_done(loop: EventLoop) -> None:
    """Every item put, the roots and all they lead to, is finished before crawl() returns."""
    roots = ["http://one.invalid/", "http://two.invalid/"]
    # 30 items of 0.08 s on 3 workers: 0.8 s of work, longer than a crawl that waits a time
    # of its own (a sleep for join) would guess; the next test catches a longer guess
    crawler = StandIn(roots, Options(max_tasks=3, max_redirect=3), item_time=0.08)
    crawl_stand_in(loop, crawler)
    assert crawler.started == 3, reason(
        "s2-crawl.workers-started-not-max-tasks", value0=crawler.started
    )
    expected = {root + "".join(path) for root in roots for path in paths(3)}
    assert sorted(crawler.finished) == sorted(expected), reason("s2-crawl.a-url-put-in-the")


def paths(depth: int) -> list[str]:
    """Every string of "a" and "b" of length 0 to depth."""
    found = [""]
    for length in range(depth):
        found += [p + c for p in found if len(p) == length for c in "ab"]
    return found


@pytest.mark.task(taskno=1)
def test_crawl_prepares_what_the_workers_share(loop: EventLoop) -> None:
    """Before the workers start: the queue, no robots.txt fetch yet, no host's slots yet."""
    crawler = StandIn(["http://one.invalid/"], Options(max_tasks=2, max_redirect=0))
    crawl_stand_in(loop, crawler)
    assert crawler.shared == [("Queue", "dict", "dict")] * 2, reason(
        "s2-crawl.types-of", value1=SHARED
    )
    assert crawler.robots_known == [{}, {}], reason("s2-crawl.robots-tasks-must-start-empty")


@pytest.mark.task(taskno=1)
def test_crawl_cancels_the_workers_and_waits_for_them(loop: EventLoop) -> None:
    """When join() returns, the idle workers are cancelled, and crawl() waits for each."""
    crawler = StandIn(["http://one.invalid/"], Options(max_tasks=4, max_redirect=2))
    start = time.monotonic()
    crawl_stand_in(loop, crawler)
    took = time.monotonic() - start  # the work: 7 items of 0.002 s on 4 workers
    assert len(crawler.finished) == 7, reason(
        "s2-crawl.urls-finished-not-7", value0=len(crawler.finished)
    )
    assert took < AFTER_THE_WORK_S, reason(
        "s2-crawl.returned-long-after-the-work", took=f"{took:.2f}"
    )
    assert crawler.stopped == 4, reason(
        "s2-crawl.crawl-returned-with-of-4", value1=4 - crawler.stopped
    )


@pytest.mark.task(taskno=1)
def test_a_cancelled_crawl_cancels_its_workers(loop: EventLoop) -> None:
    """Ctrl-C cancels the main task: crawl()'s clean-up must stop the workers too."""
    crawler = StandIn(["http://one.invalid/"], Options(max_tasks=3, max_redirect=9), 10.0)
    main = Task(crawler.crawl())
    loop.call_later(0.05, main.cancel)
    start = time.monotonic()
    with raises(CancelledError, reason("s2-crawl.ctrl-c-swallowed")):
        run(loop, main)
    assert time.monotonic() - start < 2, reason("s2-crawl.the-cancelled-crawl-went-on")
    assert main.cancelled(), reason("s2-crawl.cancelling-the-crawl-must-cancel")
    assert crawler.stopped == 3, reason("s2-crawl.a-worker-still-runs-after")


# --- Task 2: Crawler.work -----------------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_the_default_site_gives_the_oracles_pages_and_records(
    loop: EventLoop, default_site: tuple[Site, str]
) -> None:
    """The whole crawl: every URL and every record as the test site's oracle says."""
    site, base_url = default_site
    crawler = Watched([base_url])
    result = crawl(loop, crawler)
    for url, exc in crawler.bugs[:1]:  # no page of this site makes the crawler fail
        pytest.fail(reason("s2-crawl.a-page-raised", url=url, error=error_text(exc)))
    assert_matches_oracle(result, site.expected(base_url))
    requested = {base_url.rstrip("/") + path: n for path, n in site.requests.items()}
    assert requested == {url: exp.tries for url, exp in site.expected(base_url).items()}, reason(
        "s2-crawl.a-url-was-requested-more"
    )
    assert next(iter(site.requests)) == "/robots.txt", reason("s2-crawl.a-page-was-fetched-before")


@pytest.mark.task(taskno=2)
def test_robots_txt_is_obeyed(loop: EventLoop) -> None:
    """A robots.txt with rules: the URLs it forbids are recorded, never fetched."""
    site = Site(pages=100, robots="rules")
    with serve(site) as base_url:
        result = crawl(loop, Watched([base_url]))
    assert_matches_oracle(result, site.expected(base_url))
    assert not [path for path in site.requests if path.startswith(("/p/7", "/traps/private/"))], (
        reason("s2-crawl.a-page-robots-txt-forbids")
    )


@pytest.mark.task(taskno=2)
def test_a_bug_on_one_page_is_recorded_and_the_crawl_goes_on(
    loop: EventLoop, default_site: tuple[Site, str]
) -> None:
    """--fail-on makes link parsing raise: the worker records the error and takes the next URL."""
    site, base_url = default_site
    result = crawl(loop, Watched([base_url], Options(fail_on="/traps/")))
    failed = {s.url for s in result.fetches if s.error and "ParseError" in s.error}
    assert base_url + "traps/" in failed, reason(
        "s2-crawl.traps-was-not-recorded-as", base_url=base_url
    )
    assert all(s.status is None and s.tries == 1 for s in result.fetches if s.url in failed), (
        reason("s2-crawl.a-failed-page-must-be")
    )
    pages = {url for url in site.expected(base_url) if "/p/" in url}
    assert pages and pages <= result.urls, reason("s2-crawl.the-crawl-stopped-at-the")


@pytest.mark.task(taskno=2)
def test_the_workers_fetch_side_by_side(loop: EventLoop) -> None:
    """Four workers keep four fetches in flight, as the server sees it."""
    site = Site(pages=60, traps=False, latency=0.05)
    with serve(site) as base_url:
        result = crawl(loop, Watched([base_url], Options(max_tasks=4)))
        assert site.max_in_flight == 4, reason(
            "s2-crawl.the-server-saw-requests-at", value1=site.max_in_flight
        )
    assert_matches_oracle(result, site.expected(base_url))


class Interrupted(Watched):
    """A crawler whose every fetch waits forever, robots.txt's too: only a cancel (Ctrl-C)
    can end it."""

    def fetch(self, url: str, max_redirect: int) -> Coroutine[None]:
        """A fetch in flight, until cancelled."""
        yield from Future()


@pytest.mark.task(taskno=2)
@pytest.mark.parametrize("robots", ["ignored", "fetched"])
def test_ctrl_c_during_a_fetch_stops_the_workers(loop: EventLoop, robots: str) -> None:
    """Ctrl-C cancels the crawl, which cancels its workers wherever they wait: in a fetch, for
    the host's slot, for robots.txt.  Each one ends with its item done, no page is recorded
    as a bug, and crawl() ends cancelled (the partial result is kept)."""
    roots = ["http://host-0.invalid/a", "http://host-0.invalid/b", "http://host-1.invalid/"]
    options = Options(max_tasks=3, max_per_host=1, ignore_robots=robots == "ignored")
    crawler = Interrupted(roots, options)
    main = Task(crawler.crawl())
    loop.call_later(0.02, main.cancel)  # each worker has taken its item by then
    with raises(CancelledError, reason("s2-crawl.ctrl-c-not-a-cancel")):
        run(loop, main, explain=lambda: reason("s2-crawl.cancel-caught"))
    bugs = [fetch.url for fetch in crawler.result().fetches if fetch.error]
    assert not bugs, reason("s2-crawl.cancel-recorded", urls=bugs)
    undone = crawler.q._unfinished_tasks - len(crawler.q._queue)  # taken, and not marked done
    assert undone == 0, reason("s2-crawl.cancel-left-items-undone", undone=undone)


class Broken(Watched):
    """A crawler that fetches nothing, with a bug outside the fetch for one URL: in begin()
    or while it waits for robots.txt."""

    def __init__(self, roots: list[str], options: Options, where: str, url: str) -> None:
        super().__init__(roots, options)
        self.where, self.broken_url = where, url
        self.fetched: list[str] = []

    def robots(self, url: str) -> Coroutine[None]:
        """Crawler.robots, but raising for the broken URL if the bug is there."""
        yield from sleep(0)  # a wait for robots.txt, known at once
        self.bug_at("robots", url)

    def begin(self, url: str) -> bool:
        """BaseCrawler.begin, but raising for the broken URL if the bug is there."""
        self.bug_at("begin", url)
        return super().begin(url)

    def bug_at(self, where: str, url: str) -> None:
        """Raise a bug if it is here, for the broken URL."""
        if where == self.where and url == self.broken_url:
            raise ParseError(f"a bug in {where}() for {url}")

    def fetch(self, url: str, max_redirect: int) -> Coroutine[None]:
        """A fetch that takes a loop turn and finds no links."""
        yield from sleep(0)
        self.fetched.append(url)


@pytest.mark.task(taskno=2)
@pytest.mark.parametrize("where", ["robots", "begin"])
def test_a_bug_outside_the_fetch_is_recorded_and_the_crawl_goes_on(
    loop: EventLoop, where: str
) -> None:
    """The bug of a page may come before its fetch: while robots.txt is awaited, or in
    begin().  It is recorded all the same, its item is done, and the worker goes on."""
    roots = [f"http://host-{n}.invalid/" for n in range(4)]
    broken = roots[1]
    crawler = Broken(roots, Options(max_tasks=2, ignore_robots=True), where, broken)
    crawl(loop, crawler)
    assert [url for url, _ in crawler.bugs] == [broken], reason(
        "s2-crawl.bug-outside-fetch-not-recorded", where=where, url=broken
    )
    assert sorted(crawler.fetched) == sorted(set(roots) - {broken}), reason(
        "s2-crawl.the-crawl-stopped-at-the"
    )


@pytest.mark.task(taskno=2)
def test_robots_txt_takes_a_slot_of_its_host(loop: EventLoop) -> None:
    """--max-per-host counts every request to a host, robots.txt too: two origins on one host
    (two ports), one slot, and the server never sees two requests to that host at once."""
    site = Site(pages=3, traps=False, latency=0.05)
    with serve(site) as first, serve(site) as second:  # one host, 127.0.0.1, two origins
        crawler = Watched([first, second], Options(max_tasks=4, max_per_host=1))
        crawl(loop, crawler)
    most = site.max_in_flight_by_host.get("127.0.0.1")
    assert most == 1, reason("s2-crawl.host-over-its-slots", most=most)
    assert site.requests["/robots.txt"] == 2, reason("s2-crawl.one-robots-per-origin")
