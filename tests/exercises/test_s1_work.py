"""Exercise s1-work: stage 1's queue and its limit (Crawler.work, Crawler.finished).

Task 1 is Crawler.work: start fetches from the queue while fewer than --max-tasks are in
flight.  Task 2 is Crawler.finished: a fetch that ends makes room, queues what it found
and calls work() again.  Stages 2 and 3 keep --max-tasks workers waiting at the queue;
a callback cannot wait, so here the end of one fetch starts the next.

The Task 1 tests call work() on a Crawler set up as crawl() sets it up (the Harness
below) without turning its loop, so no fetch runs and finished() is never needed.  The
Task 2 tests crawl the test site of shared/testsite.py and compare with its oracle.
"""

from __future__ import annotations

import pytest
import stage1_harness
from reasons import reason
from stage1_harness import WatchedLoop, watch_crawls

import stage1_callbacks
from shared.crawling import Options, host_key
from shared.report import CrawlResult
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle
from shared.testsite.raw import closed_port_url
from stage1_callbacks.crawler import Fetcher

ROOT = "http://127.0.0.1:9/"  # never connected to: the Task 1 tests do not turn the loop


class Harness(stage1_harness.Harness):
    """A stage 1 Crawler set up as crawl() sets it up, whose loop the test does not turn."""

    def __init__(self, options: Options) -> None:
        super().__init__(ROOT, options)

    def end(self, url: str) -> None:
        """Take one Fetcher out of flight, as finished() would, and close it."""
        self.fetchers.pop(url).close()
        # Its record, made before finished() in a real crawl, frees a slot of its host.
        self.host_load[host_key(url)] -= 1

    def close_all(self) -> None:
        """Close every Fetcher still in flight (none has started), then the loop."""
        for fetcher in self.fetchers.values():
            fetcher.close()
        self.loop.close()


def queued(crawler: Harness) -> list[str]:
    """The URLs waiting in the crawler's queue, in order."""
    return [url for url, _ in crawler.q]


def work(crawler: Harness) -> None:
    """Call crawler.work(); a KeyError about a robots.txt fails the test saying why."""
    try:
        crawler.work()
    except KeyError as exc:
        if "robots.txt" not in str(exc):
            raise
        pytest.fail(reason("s1-work.begin-before-robots", error=repr(exc)))


# --- no crawl hangs ------------------------------------------------------------------------

CRAWL_LIMIT_S = 5.0  # far above what a right answer takes; a wrong one may wait forever


@pytest.fixture(autouse=True)
def loops(monkeypatch: pytest.MonkeyPatch) -> list[WatchedLoop]:
    """Give every stage 1 crawl of this module a deadline, rather than let it hang."""
    return watch_crawls(monkeypatch, CRAWL_LIMIT_S, reason("s1-work.never-next"))


# --- the oracle's view of a record ---------------------------------------------------------


def assert_root_crawled(result: CrawlResult, base: str) -> None:
    """The root page, parked while its robots.txt was fetched, was crawled in the end."""
    assert any(url.rstrip("/") == base.rstrip("/") for url in result.urls), reason(
        "s1-work.the-root-page-was-never"
    )


# --- Task 1: work() -----------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_work_starts_fetches_in_queue_order_up_to_max_tasks() -> None:
    """Three may be in flight: work() starts three, and one more each time one ends."""
    crawler = Harness(Options(max_tasks=3, ignore_robots=True))
    urls = [f"{ROOT}p/{n}" for n in range(5)]
    crawler.q.extend((url, 10) for url in urls)
    try:
        work(crawler)
        assert list(crawler.fetchers) == urls[:3], reason("s1-work.the-first-three-taken-from")
        assert queued(crawler) == urls[3:], reason("s1-work.too-many", count=len(crawler.fetchers))
        work(crawler)
        assert list(crawler.fetchers) == urls[:3], reason("s1-work.no-room-so-nothing-more")
        crawler.end(urls[0])
        work(crawler)
        assert list(crawler.fetchers) == urls[1:4], reason("s1-work.when-a-fetch-ends-the")
        assert queued(crawler) == urls[4:], reason("s1-work.the-queue-should-hold-only")
        # Each URL was claimed with begin() before its fetch: it counts as in flight.
        assert set(crawler.in_flight) == set(urls[:4]), reason("s1-work.claim-each-url-with-self")
    finally:
        crawler.close_all()


@pytest.mark.task(taskno=1)
def test_work_keeps_the_redirects_left_with_each_url() -> None:
    """The number that travels with a URL in the queue goes to its Fetcher."""
    crawler = Harness(Options(ignore_robots=True))
    crawler.q.extend([(ROOT, 10), (ROOT + "moved", 3)])
    try:
        work(crawler)
        redirects = {url: f.max_redirect for url, f in crawler.fetchers.items()}
        assert redirects == {ROOT: 10, ROOT + "moved": 3}, reason(
            "s1-work.the-fetches-got-each-url", redirects=redirects
        )
    finally:
        crawler.close_all()


@pytest.mark.task(taskno=1)
def test_work_parks_pages_until_their_robots_txt_is_in() -> None:
    """A new origin: its robots.txt is fetched first, and its pages wait for it."""
    crawler = Harness(Options(max_tasks=5))
    crawler.q.extend([(ROOT, 10), (ROOT + "a", 10)])
    robots = ROOT + "robots.txt"
    try:
        work(crawler)
        assert list(crawler.fetchers) == [robots], reason("s1-work.ask-self-robots-txt-url")
        assert crawler.parked == {robots: [(ROOT, 10), (ROOT + "a", 10)]}, reason(
            "s1-work.self-park"
        )
        assert not crawler.q, reason("s1-work.a-url-begin-refused-must")
        assert crawler.requested == 0, reason("s1-work.a-parked-page-is-not")
    finally:
        crawler.close_all()


@pytest.mark.task(taskno=1)
def test_a_parked_page_holds_no_slot_of_max_tasks() -> None:
    """--max-tasks 2: one origin's robots.txt takes one slot, its pages park without one,
    and the other origin's robots.txt takes the second."""
    crawler = Harness(Options(max_tasks=2))
    other = "http://127.0.0.2:9/"
    crawler.q.extend([(ROOT, 10), (ROOT + "a", 10), (ROOT + "b", 10), (other, 10)])
    try:
        work(crawler)
        started = list(crawler.fetchers)
        assert started == [ROOT + "robots.txt", other + "robots.txt"], reason(
            "s1-work.parked-holds-a-slot", started=started, waiting=queued(crawler)
        )
    finally:
        crawler.close_all()


@pytest.mark.task(taskno=1)
def test_work_leaves_out_what_begin_refuses() -> None:
    """With --max-pages 2 spent, the other URLs leave the queue without a fetch."""
    crawler = Harness(Options(max_tasks=10, max_pages=2, ignore_robots=True))
    crawler.q.extend((f"{ROOT}p/{n}", 10) for n in range(4))
    try:
        work(crawler)
        assert list(crawler.fetchers) == [f"{ROOT}p/0", f"{ROOT}p/1"], reason(
            "s1-work.started-pages-are-parked-until", value1=list(crawler.fetchers)
        )
        assert not crawler.q, reason("s1-work.a-url-that-begin-refuses")
    finally:
        crawler.close_all()


@pytest.mark.task(taskno=1)
def test_a_url_whose_host_is_full_waits_in_line_and_work_goes_on() -> None:
    """--max-per-host 1: a second URL of a busy host waits in its line; the next host's starts."""
    crawler = Harness(Options(max_tasks=5, max_per_host=1, ignore_robots=True))
    other = "http://127.0.0.2:9/"
    crawler.q.extend([(ROOT + "a", 10), (ROOT + "b", 10), (other, 10)])
    try:
        work(crawler)
        assert list(crawler.fetchers) == [ROOT + "a", other], reason(
            "s1-work.started-when-host-slot-says", value1=list(crawler.fetchers)
        )
        assert list(crawler.host_lines[host_key(ROOT)]) == [(ROOT + "b", 10)], reason(
            "s1-work.the-url-of-the-full"
        )
    finally:
        crawler.close_all()


# --- Task 2: finished() --------------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_each_finished_fetch_starts_the_next_and_max_tasks_is_kept() -> None:
    """The server sees at most --max-tasks requests at once, and reaches that many."""
    site = Site(pages=40, traps=False, latency=0.05)
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(max_tasks=4))
        assert_root_crawled(result, base)
        assert_matches_oracle(result, site.expected(base))
    assert site.max_in_flight == 4, reason(
        "s1-work.the-server-saw-requests-at", value1=site.max_in_flight, most=4
    )


@pytest.mark.task(taskno=2)
def test_pages_parked_for_robots_txt_are_crawled_once_it_is_in() -> None:
    """robots.txt first; then the pages it allows, and a record for those it forbids."""
    site = Site(pages=30, traps=False, robots="rules")
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(max_tasks=3))
        assert_root_crawled(result, base)
        assert_matches_oracle(result, site.expected(base))
        assert next(iter(site.requests)) == "/robots.txt", reason(
            "s1-work.robots-txt-must-be-fetched"
        )


@pytest.mark.task(taskno=2)
def test_failed_fetches_make_room_too() -> None:
    """One fetch at a time: each refused connection must still start the next fetch."""
    site = Site(pages=3, traps=False)
    with serve(site) as base:
        closed = closed_port_url()
        roots = [closed + "a", closed + "b", base]
        options = Options(max_tasks=1, max_tries=1, ignore_robots=True)
        result = stage1_callbacks.crawl(roots, options)
        expected = site.expected(base, ignore_robots=True)
    failed = {stat.url for stat in result.fetches if stat.error}
    assert failed == set(roots[:2]), reason(
        "s1-work.failed-the-two-refused-roots", value1=sorted(failed)
    )
    assert result.urls == failed | set(expected), reason("s1-work.a-failed-fetch-must-still")


@pytest.mark.task(taskno=2)
def test_a_finished_fetch_lets_the_next_url_of_its_host_start() -> None:
    """--max-per-host 1: the URLs in the host's line start one by one as fetches end."""
    site = Site(pages=12, traps=False)
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(max_per_host=1, ignore_robots=True))
        expected = site.expected(base, ignore_robots=True)
    missing = sorted(set(expected) - result.urls)
    assert not missing, reason("s1-work.never-fetched-when-a-fetch", missing=missing)
    assert site.max_in_flight == 1, reason(
        "s1-work.the-server-saw-requests-at", value1=site.max_in_flight, most=1
    )


@pytest.mark.task(taskno=2)
def test_the_default_site_gives_the_oracles_records(default_site: tuple[Site, str]) -> None:
    """Links, redirects, retries and robots.txt: every URL fetched once, none forgotten."""
    site, base = default_site
    result = stage1_callbacks.crawl([base], Options())
    assert_matches_oracle(result, site.expected(base))


@pytest.mark.task(taskno=2)
def test_finished_puts_what_waited_longest_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """robots.txt ends: its host's next URL first, its parked pages in the order they came,
    the queue as it was, the new links last; and then, once, work()."""
    crawler = Harness(Options(max_tasks=5))
    robots = ROOT + "robots.txt"
    fetcher = crawler.fetchers[robots] = Fetcher(crawler, robots, 0)
    crawler.parked[robots] = [(ROOT + "a", 10), (ROOT + "b", 10), (ROOT + "c", 10)]
    crawler.host_lines[host_key(ROOT)].extend([(ROOT + "w1", 10), (ROOT + "w2", 10)])
    crawler.q.append((ROOT + "older", 10))
    worked: list[list[str]] = []
    monkeypatch.setattr(crawler, "work", lambda: worked.append(queued(crawler)))
    try:
        crawler.finished(fetcher, [(ROOT + "link", 10)])
    finally:
        crawler.close_all()
    expected = ["w1", "a", "b", "c", "older", "link"]
    got = [url.removeprefix(ROOT) for url in queued(crawler)]
    assert got == expected, reason("s1-work.finished-order", got=got, expected=expected)
    assert robots not in crawler.fetchers and robots not in crawler.parked, reason(
        "s1-work.finished-forgets"
    )
    assert [(url, n) for url, n in crawler.host_lines[host_key(ROOT)]] == [(ROOT + "w2", 10)], (
        reason("s1-work.finished-order", got=got, expected=expected)
    )
    assert len(worked) == 1 and worked[0] == queued(crawler), reason("s1-work.never-next")
