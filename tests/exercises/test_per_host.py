"""Exercise per-host: at most --max-per-host fetches in flight per host, in three styles.

Task N is stage N's `Crawler.host_slot`: a line of waiting URLs in stage 1, a Queue of
tokens in stage 2, an asyncio.Semaphore in stage 3 (see
shared/tools/exercises/per-host/README.md).  Every test crawls one site served on three
loopback hosts at once and asks the server how many requests each host had in flight
at most; the records must be the site's oracle's, whatever the limit.
"""

from __future__ import annotations

import importlib
from collections import defaultdict, deque
from typing import Any

import pytest
from reasons import reason

from shared.crawling import Options, host_key
from shared.testsite import Site, loopback_hosts, serve_hosts
from shared.testsite.oracle import assert_matches_oracle, expected_fields, fields

# Each stage is a task of its own: task 1 is stage 1, and so on.
STAGES = [
    pytest.param("stage1_callbacks", marks=pytest.mark.task(taskno=1), id="stage1"),
    pytest.param("stage2_generators", marks=pytest.mark.task(taskno=2), id="stage2"),
    pytest.param("stage3_asyncio", marks=pytest.mark.task(taskno=3), id="stage3"),
]
HOSTS = loopback_hosts(3)  # 127.0.0.1, 127.0.0.2 and 127.0.0.3


def crawl_three_hosts(
    package: str, options: Options, site: Site, hosts: list[str] = HOSTS
) -> dict[str, int]:
    """Crawl ``site`` on three hosts at once (or on ``hosts``); check the records; return
    each host's peak."""
    crawl = importlib.import_module(package).crawl
    with serve_hosts(site, hosts) as bases:
        result = crawl(bases, options)
        assert not result.interrupted, reason("per-host.the-crawl-was-interrupted")
        expected = site.expected(bases)
        never = set(expected) - result.urls
        failed = [
            s
            for s in result.fetches
            if s.error and (s.url not in expected or fields(s) != expected_fields(expected[s.url]))
        ]
        assert not never or failed, reason("per-host.never-woken", count=len(never))
        assert_matches_oracle(result, expected)
    return site.max_in_flight_by_host


@pytest.mark.task(taskno=1)
def test_stage1_a_full_host_lines_urls_up_first_come_and_a_free_slot_wakes_one() -> None:
    """Stage 1's line, without a crawl: a full host keeps its URLs in the order they came
    and leaves the queue alone; a URL that finds room wakes the first in line, one only, to
    the front of the queue: it waited longest."""
    crawler = importlib.import_module("stage1_callbacks.crawler").Crawler([], Options())
    base, host = "http://127.0.0.1:9/", host_key("http://127.0.0.1:9/")
    crawler.q, crawler.host_lines = deque(), defaultdict(deque)
    crawler.host_load[host] = crawler.max_per_host  # the host is full
    said = [crawler.host_slot(base + path, 10) for path in ("a", "b", "c")]
    line = [url.removeprefix(base) for url, _ in crawler.host_lines[host]]
    queue = [url.removeprefix(base) for url, _ in crawler.q]
    assert said == [False] * 3 and line == ["a", "b", "c"] and not queue, reason(
        "per-host.stage1-line", said=said, line=line, queue=queue
    )
    crawler.host_load[host] -= 1  # a fetch of the host ended: one slot is free
    crawler.q.append(("http://127.0.0.2:9/x", 10))  # another host's URL, queued meanwhile
    let_through = crawler.host_slot(base + "d", 10)
    line = [url.removeprefix(base) for url, _ in crawler.host_lines[host]]
    queue = [url.removeprefix(base) for url, _ in crawler.q]
    assert let_through is True, reason("per-host.stage1-room")
    assert queue == ["a", "http://127.0.0.2:9/x"] and line == ["b", "c"], reason(
        "per-host.stage1-wake-one", line=line, queue=queue
    )


@pytest.mark.parametrize("package", STAGES)
def test_each_host_has_at_most_max_per_host_in_flight(package: str) -> None:
    """--max-tasks 6 --max-per-host 2 on three hosts: two at once on each, never three."""
    site = Site(pages=40, traps=False, latency=0.03)
    peaks = crawl_three_hosts(package, Options(max_tasks=6, max_per_host=2), site)
    assert peaks == dict.fromkeys(HOSTS, 2), reason("per-host.peaks", peaks=peaks, most=2)
    assert site.max_in_flight > 2, reason("per-host.the-hosts-were-never-busy")


@pytest.mark.parametrize("package", STAGES)
def test_no_url_is_lost_when_robots_txt_forbids_one_that_waited(package: str) -> None:
    """One at a time per host, 80 links at once, some forbidden: every URL gets its record."""
    site = Site(pages=81, fanout=80, traps=False, robots="rules", latency=0.005)
    peaks = crawl_three_hosts(package, Options(max_tasks=6, max_per_host=1), site)
    assert peaks == dict.fromkeys(HOSTS, 1), reason("per-host.peaks", peaks=peaks, most=1)


@pytest.mark.parametrize("package", STAGES)
def test_without_max_per_host_a_host_may_have_every_fetch(package: str) -> None:
    """No --max-per-host: the limit is --max-tasks, and one host does get more than 2."""
    site = Site(pages=40, traps=False, latency=0.03)
    peaks = crawl_three_hosts(package, Options(max_tasks=6), site)
    assert max(peaks.values()) > 2, reason("per-host.a-limit-where-none-was")


@pytest.mark.parametrize("package", STAGES)
def test_a_host_on_two_ports_is_one_host(package: str) -> None:
    """127.0.0.1 served on two ports, --max-per-host 1: one fetch at a time to the host,
    whichever port it goes to.  A slot is the host's, not its origin's."""
    site = Site(pages=20, traps=False, latency=0.03)
    peaks = crawl_three_hosts(package, Options(max_tasks=4, max_per_host=1), site, HOSTS[:1] * 2)
    assert peaks == {HOSTS[0]: 1}, reason("per-host.a-port-is-not-a-host", peaks=peaks)


@pytest.mark.task(taskno=2)
def test_stage2_a_slot_comes_back_however_its_block_ends() -> None:
    """Stage 2's slot, without a crawl: a with block that a page's bug or a cancel ends
    gives its token back, as one that ends well does; else the host loses a slot for good."""
    from stage2_generators.crawler import Crawler
    from stage2_generators.loop import EventLoop

    crawler = Crawler(["http://127.0.0.1:9/"], Options(max_per_host=1))
    url = "http://127.0.0.1:9/page"
    crawler.host_slots = {}  # as crawl() starts them

    def twice_broken_then_used() -> Any:
        for _ in range(2):
            try:
                with (yield from crawler.host_slot(url)):
                    raise RuntimeError("a page's bug")
            except RuntimeError:
                pass
        return len(crawler.host_slots[host_key(url)]._queue)  # the tokens it holds now

    loop = EventLoop()
    try:
        left = loop.run_until_complete(twice_broken_then_used())
    finally:
        loop.close()
    assert left == 1, reason("per-host.slot-lost-on-error", left=left)
