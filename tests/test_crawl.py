"""The one suite every stage must pass: same pages, same records, same options.

Each test takes the ``stage`` fixture, so it runs once per stage in
``tests/conftest.py``'s STAGES.  The right answer always comes from the test site's
own oracle (``Site.expected``), never from another crawler's output.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from shared import USER_AGENT
from shared.crawling import Options
from shared.language import LOCALE_VARIABLES
from shared.log import WARNING, Record
from shared.observe import Observer
from shared.report import CrawlResult
from shared.robots import DISALLOWED as DISALLOWED_ERROR
from shared.testsite import (
    DISALLOWED,
    ROBOTS_KINDS,
    ServerTLS,
    Site,
    local_tls,
    loopback_hosts,
    serve,
    serve_hosts,
)
from shared.testsite.hostile_wire import BACKSLASH_HOST, COOKIE_GATED, wire_pages
from shared.testsite.oracle import assert_matches_oracle
from shared.testsite.traps import OBEYED_KINDS
from shared.tools.bench import threaded
from shared.tools.instruments import watching
from shared.tools.instruments.timeline import Timeline


def test_default_site_gives_the_oracles_pages_and_records(
    stage: ModuleType, either_site: tuple[Site, str, Options]
) -> None:
    """Over http and over https alike: the same pages, the same records."""
    site, base_url, options = either_site
    result = stage.crawl([base_url], options)
    assert result.stage == stage.__name__
    assert not result.interrupted
    assert_matches_oracle(result, site.expected(base_url))


def test_a_5000_page_site_gives_the_oracles_pages(stage: ModuleType) -> None:
    site = Site(pages=5000, traps=False)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tasks=20))
        assert_matches_oracle(result, site.expected(base_url))


def test_each_url_is_requested_once_per_try(
    stage: ModuleType, either_site: tuple[Site, str, Options]
) -> None:
    """Redirects that join on one target, duplicate links, cycles: nothing fetched twice."""
    site, base_url, options = either_site
    stage.crawl([base_url], options)
    expected = site.expected(base_url)
    requested = {base_url.rstrip("/") + path: n for path, n in site.requests.items()}
    assert requested == {url: exp.tries for url, exp in expected.items()}
    # robots.txt came first, and every request, robots.txt's too, named the crawler.
    assert next(iter(site.requests)) == "/robots.txt"
    assert site.user_agents == {USER_AGENT: sum(site.requests.values())}


@pytest.mark.parametrize("max_redirect", [0, 2])
def test_max_redirect(stage: ModuleType, default_site: tuple[Site, str], max_redirect: int) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_redirect=max_redirect))
    assert_matches_oracle(result, site.expected(base_url, max_redirect=max_redirect))


@pytest.mark.parametrize("max_tries", [1, 2])
def test_max_tries(stage: ModuleType, default_site: tuple[Site, str], max_tries: int) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_tries=max_tries))
    assert_matches_oracle(result, site.expected(base_url, max_tries=max_tries))


def test_exclude(stage: ModuleType, default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    exclude = r"/p/\d*7$|redirect"
    result = stage.crawl([base_url], Options(exclude=exclude))
    expected = site.expected(base_url, exclude=exclude)
    assert_matches_oracle(result, expected)
    assert len(expected) < len(site.expected(base_url))


def test_lenient_scope_on_an_ip_root_is_the_same_site(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(strict=False))
    assert_matches_oracle(result, site.expected(base_url))


def test_max_tasks_is_the_most_requests_the_server_sees_at_once(stage: ModuleType) -> None:
    site = Site(pages=60, traps=False, latency=0.05)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tasks=4))
        assert site.max_in_flight == 4
        assert len(result.fetches) == len(site.expected(base_url))


def crawl_three_hosts(stage: ModuleType, options: Options, site: Site | None = None) -> Site:
    """Crawl one site served on three hosts at once; check the records, return the site."""
    site = site or Site(pages=40, traps=False, latency=0.03)
    with serve_hosts(site, loopback_hosts(3)) as bases:
        result = stage.crawl(bases, options)
        assert_matches_oracle(result, site.expected(bases))
    assert len(site.max_in_flight_by_host) == 3
    return site


def test_max_per_host_is_the_most_requests_one_host_sees_at_once(stage: ModuleType) -> None:
    """Each host sees at most 2 at once, while the crawl keeps several hosts busy."""
    site = crawl_three_hosts(stage, Options(max_tasks=6, max_per_host=2))
    assert site.max_in_flight_by_host == {"127.0.0.1": 2, "127.0.0.2": 2, "127.0.0.3": 2}
    assert site.max_in_flight > 2  # hosts were busy together: not one host at a time


def test_urls_waiting_for_their_host_are_never_lost(stage: ModuleType) -> None:
    """One fetch per host, and robots.txt forbids some pages: each still gets its record.

    The root links to 80 pages at once, so they all wait for their host's one slot; a
    URL whose turn comes but that robots.txt forbids (/p/7, /p/70 ...) must not leave
    the URLs waiting behind it stranded.
    """
    site = Site(pages=81, fanout=80, traps=False, robots="rules", latency=0.005)
    crawl_three_hosts(stage, Options(max_tasks=6, max_per_host=1), site)
    assert site.max_in_flight_by_host == {"127.0.0.1": 1, "127.0.0.2": 1, "127.0.0.3": 1}


def test_without_max_per_host_one_host_may_see_every_fetch(stage: ModuleType) -> None:
    """The limit above is not the site's own shape: unlimited, a host sees more than 2."""
    site = crawl_three_hosts(stage, Options(max_tasks=6))
    assert max(site.max_in_flight_by_host.values()) > 2


def test_delay_spaces_the_requests_to_one_host(stage: ModuleType) -> None:
    """--delay 0.1: the server sees each request start at least ~0.1 s after the one before."""
    site = Site(pages=8, traps=False)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tasks=4, delay=0.1))
        assert_matches_oracle(result, site.expected(base_url))
    arrived = sorted(when for when, _, _ in site.arrivals)
    assert len(arrived) == len(result.fetches)  # robots.txt's request too
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrived)]
    # Arrivals, not starts: a busy machine may shift one by a connect's worth of time,
    # shrinking one gap and growing the next.  The span and the typical gap hold.
    assert arrived[-1] - arrived[0] >= len(gaps) * 0.1 - 0.02
    assert statistics.median(gaps) >= 0.08


@pytest.mark.parametrize("max_pages", [1, 7, 50])
def test_max_pages_gives_exactly_n_page_records(
    stage: ModuleType, default_site: tuple[Site, str], max_pages: int
) -> None:
    """robots.txt is fetched and recorded on top of the N pages."""
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_pages=max_pages, max_tries=1))
    robots = base_url + "robots.txt"
    assert robots in result.urls
    assert len(result.fetches) == max_pages + 1
    assert len(site.requests) <= max_pages + 1
    assert result.urls <= set(site.expected(base_url, max_tries=1))


def crawl_the_hostile_site(
    crawl: Callable[[list[str], Options], CrawlResult], limit_s: float
) -> tuple[CrawlResult, str]:
    """Crawl Site(hostile=True), half a second a try and two tries, and check that the crawl
    ended within ``limit_s`` (a hang bound) and as the oracle says.  Returns the result and
    the base URL.  The benchmark's threaded baseline is held to it too."""
    site = Site(hostile=True)
    with serve(site) as base_url:
        started = time.monotonic()
        result = crawl([base_url], Options(timeout=0.5, max_tries=2))
        assert time.monotonic() - started < limit_s
        assert_matches_oracle(result, site.expected(base_url, max_tries=2))
    return result, base_url


def test_hostile_pages_end_as_records_and_the_crawl_finishes(stage: ModuleType) -> None:
    """Silence, resets, short bodies, garbage, 20 MB and binary: no hang, no crash.

    A try that timed out says so with its bound, in every stage.
    """
    result, base_url = crawl_the_hostile_site(stage.crawl, 30)
    silent = result.by_url()[base_url + "hostile/silent"].error or ""
    assert silent.startswith("TimeoutError: ") and silent.endswith(" 0.5 s"), silent


def test_the_threaded_baseline_retries_and_times_out_like_the_stages() -> None:
    """The benchmark's thread pool is held to the same records: it races fair."""
    result, base_url = crawl_the_hostile_site(threaded.crawl, 20)
    silent = result.by_url()[base_url + "hostile/silent"]
    assert silent.tries == 2 and "Timeout" in (silent.error or "")


@pytest.fixture(scope="module")
def wire_site() -> Iterator[tuple[Site, str]]:
    """A small site with the wire cases: responses odd byte by byte (hostile_wire.py)."""
    site = Site(pages=30, wire=True)
    with serve(site) as base_url:
        yield site, base_url


def test_the_wire_cases_give_each_stage_the_oracles_records(
    stage: ModuleType, wire_site: tuple[Site, str]
) -> None:
    """UTF-8 and Latin-1 Locations, obs-fold, control bytes, lying lengths, a gzip bomb...

    Every URL once, each record as the oracle says for this stage, the healthy pages
    (the generated ones and the traps) unharmed, each URL requested once per try.
    """
    site, base_url = wire_site
    site.reset()
    result = stage.crawl([base_url], Options(max_tries=2))
    expected = site.expected(base_url, max_tries=2, stage=stage.__name__)
    assert_matches_oracle(result, expected)
    requested = {base_url.rstrip("/") + path: n for path, n in site.requests.items()}
    assert requested == {url: exp.tries for url, exp in expected.items()}


def test_the_wire_cases_crawled_from_the_command_line_exit_0(
    stage: ModuleType, wire_site: tuple[Site, str]
) -> None:
    """The report prints every record, odd bytes in a media type too, and exits 0."""
    site, base_url = wire_site
    site.reset()
    done = run_stage(stage, base_url, "--max-tries", "1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(base_url)]
    urls = [line.split()[0] for line in lines]
    assert sorted(urls) == sorted(site.expected(base_url, max_tries=1, stage=stage.__name__))
    assert f"{base_url}wire/type-latin1 200 text/ht\ufffdml" in done.stdout


def test_a_host_name_gets_no_cookie_back_and_one_address(
    stage: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host names, as real sites have (cookies for an address are refused by aiohttp anyway).

    ``cookie.test`` is the site; its page sets a cookie, and the page behind it answers 403
    to a request without it.  ``two.test`` has two addresses: 127.0.0.2, where nothing
    listens, then the site's.  No stage sends the cookie back, and every stage tries the
    first address only, as shared/REAL_WEB.md says.
    """
    names = {"cookie.test": ["127.0.0.1"], "two.test": ["127.0.0.2", "127.0.0.1"]}
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in names:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, int(port))) for a in names[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)  # in every thread: aiohttp's too
    site = Site(pages=1, traps=False, wire=True)
    with serve(site) as base_url:
        port = base_url.rstrip("/").rpartition(":")[2]
        setter, two = f"http://cookie.test:{port}/wire/cookie", f"http://two.test:{port}/"
        options = Options(ignore_robots=True, max_tries=2, exclude="/wire/$")  # not the hub
        records = stage.crawl([setter, two], options).by_url()
    gate = wire_pages()[COOKIE_GATED]
    assert records[f"http://cookie.test:{port}{COOKIE_GATED}"].status == gate.status == 403
    assert (records[two].status, records[two].tries) == (None, 2), records[two]
    assert dict(site.requests) == {"/wire/cookie": 1, COOKIE_GATED: 1}  # none for two.test


def test_a_backslash_in_a_host_makes_no_url_even_when_lenient(
    stage: ModuleType, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """--lenient from a root named as the link's last two labels: the link is in scope but no URL.

    Every stage records the page and nothing for the link: no DNS error, no bug logged.
    """
    real = socket.getaddrinfo

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        if host != BACKSLASH_HOST:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)  # in every thread: aiohttp's too
    site = Site(pages=1, traps=False, wire=True)
    with serve(site) as base_url, caplog.at_level(logging.ERROR):
        port = base_url.rstrip("/").rpartition(":")[2]
        root = f"http://{BACKSLASH_HOST}:{port}/wire/host-backslash"
        options = Options(ignore_robots=True, strict=False, exclude="/wire/$")  # not the hub
        records = stage.crawl([root], options).by_url()
    assert list(records) == [root]
    assert (records[root].status, records[root].num_urls) == (200, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_timeout_ends_a_silent_page_with_an_error(stage: ModuleType) -> None:
    site = Site(hostile=True)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(timeout=0.3, max_tries=2))
        silent = [s for s in result.fetches if s.url.endswith("/hostile/silent")]
        assert len(silent) == 1
        assert silent[0].status is None and silent[0].tries == 2
        assert "Timeout" in (silent[0].error or "")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_file_descriptor_left_open(
    stage: ModuleType, either_site: tuple[Site, str, Options]
) -> None:
    site, base_url, options = either_site
    # Warm up: imports, caches, thread pools.
    stage.crawl([base_url], dataclasses.replace(options, max_pages=5))
    site.reset()
    before = open_fds()
    stage.crawl([base_url], options)
    # The site runs in this process too: give its thread time to close its own ends (on a
    # busy machine, a TLS server's closes can lag the crawl by seconds).
    deadline = time.monotonic() + 10
    while open_fds() > before and time.monotonic() < deadline:
        # A TLS transport whose close_notify exchange was still under way when asyncio.run
        # closed stage 3's loop is closed when it is collected, not before.
        gc.collect()
        time.sleep(0.01)
    assert open_fds() <= before


# --- https: a certificate that does not verify ----------------------------------------


@pytest.fixture(scope="module", params=["unknown CA", "wrong host name"])
def untrusted_site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Site, str, Options]]:
    """A small site over https whose certificate a crawler must refuse, and its Options."""
    directory = str(tmp_path_factory.mktemp("untrusted"))
    if request.param == "unknown CA":
        tls: ServerTLS = local_tls(directory)
        options = Options()  # the site's CA is given to no one
    else:
        tls = local_tls(directory, hosts=["wrong.example"])
        options = Options(cafile=tls.cafile)  # a trusted CA, but a certificate for another name
    site = Site(pages=20, traps=False)
    with serve(site, tls=tls) as base_url:
        yield site, base_url, options


def test_a_certificate_that_does_not_verify_is_an_error_record(
    stage: ModuleType, untrusted_site: tuple[Site, str, Options]
) -> None:
    """Never a silent downgrade, and no retry: the same certificate would fail every time."""
    site, base_url, options = untrusted_site
    site.reset()
    result = stage.crawl([base_url], options)
    assert result.urls == {base_url + "robots.txt", base_url}
    for stat in result.fetches:
        assert stat.status is None and stat.tries == 1
        assert stat.error is not None and stat.error.startswith("SSLCertVerificationError: ")
        assert "certificate verify failed" in stat.error
    assert not site.requests  # not one request was sent


def test_insecure_crawls_it_all_the_same_and_says_so(
    stage: ModuleType,
    untrusted_site: tuple[Site, str, Options],
    logged: list[Record],
) -> None:
    site, base_url, _ = untrusted_site
    site.reset()
    result = stage.crawl([base_url], Options(insecure=True))
    assert_matches_oracle(result, site.expected(base_url))
    warnings = [r for r in logged if r.level == WARNING and r.name == "crawler"]
    assert any("--insecure" in r.message for r in warnings)


# --- robots.txt ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def robots_site() -> Iterator[tuple[Site, str]]:
    """The default site, with a robots.txt that forbids some of it."""
    site = Site(robots="rules")
    with serve(site) as base_url:
        yield site, base_url


def test_robots_txt_is_obeyed_with_the_oracles_skipped_set(
    stage: ModuleType, robots_site: tuple[Site, str]
) -> None:
    site, base_url = robots_site
    site.reset()
    timeline = Timeline()
    with watching(timeline):
        result = stage.crawl([base_url], Options())
    expected = site.expected(base_url)
    assert_matches_oracle(result, expected)
    why = {stat.url: stat.error for stat in result.fetches if stat.tries == 0}
    skipped = set(why)
    assert skipped == {url for url, exp in expected.items() if exp.tries == 0}
    # Each record names the rule that decided, the same in every stage.
    assert why[base_url + "p/70"] == f"{DISALLOWED_ERROR} (Disallow: /p/7)"
    assert why[base_url + "traps/private/"] == f"{DISALLOWED_ERROR} (Disallow: /traps/private/)"
    assert {base_url + "traps/private/", base_url + "p/7", base_url + "p/70"} <= skipped
    assert not [path for path in site.requests if path.startswith(DISALLOWED)]
    # The pages waited for robots.txt: every other URL began after it was in.
    times = {url: (start, end) for url, start, end in timeline.timeline}
    robots_end = times.pop(base_url + "robots.txt")[1]
    assert all(start >= robots_end for start, _ in times.values())


def test_ignore_robots_fetches_what_robots_txt_forbids(
    stage: ModuleType, robots_site: tuple[Site, str]
) -> None:
    site, base_url = robots_site
    site.reset()
    result = stage.crawl([base_url], Options(ignore_robots=True))
    assert_matches_oracle(result, site.expected(base_url, ignore_robots=True))
    assert "/robots.txt" not in site.requests
    assert "/traps/private/page" in site.requests


class StopOnSecondFetch(Observer):
    """Press Ctrl-C, as it were, the moment a URL's fetch starts a second time in a crawl.

    A crawler that fetches robots.txt again and again never ends on its own: this ends it,
    with the partial result, so that the test fails rather than hangs.
    """

    def __init__(self) -> None:
        self.started: Counter[str] = Counter()

    def fetch_started(self, url: str) -> None:
        self.started[url] += 1
        if self.started[url] > 1:
            raise KeyboardInterrupt(f"{url} fetched again")


@pytest.mark.parametrize("robots", [None, *ROBOTS_KINDS])
def test_robots_txt_is_one_fetch_and_one_record_whatever_it_holds(
    stage: ModuleType, robots: str | None
) -> None:
    """A 404, no answer at all (a timeout), random bytes, a 500, rules, a line the stdlib's
    parser raised on, and one file for each rule of RFC 9309 (longest match, ``*``, ``$``,
    merged groups, a tie, blank lines, a byte order mark).

    Each is asked for once and recorded once; only the rules the file spells forbid pages,
    as the oracle says, and each skipped record names the Disallow line that decided.
    """
    site = Site(pages=30, robots=robots)
    with serve(site) as base_url, watching(StopOnSecondFetch()):
        # One try each: 2 s lets a busy machine answer every page in time (0.5 s did not,
        # with a new connection for each of stage 3's requests); only "silent" waits it out.
        result = stage.crawl([base_url], Options(timeout=2, max_tries=1))
    assert site.requests["/robots.txt"] == 1
    assert not result.interrupted, "a URL was fetched twice"
    assert base_url + "robots.txt" in result.urls
    assert_matches_oracle(result, site.expected(base_url, max_tries=1))
    assert (base_url + "traps/private/page" in result.urls) == (robots not in OBEYED_KINDS)
    body = site.resource("/robots.txt").body.decode("utf-8-sig", errors="replace")
    for stat in result.fetches:
        if stat.tries == 0:
            assert stat.error is not None and stat.error.startswith(DISALLOWED_ERROR + " (")
            assert stat.error.removeprefix(DISALLOWED_ERROR + " (")[:-1] + "\n" in body


# --- the command line, run as a student would run it -------------------------------------


def run_stage(
    stage: ModuleType, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    # The report in English, whatever this machine's locale: the tests read its words.
    english = {k: v for k, v in os.environ.items() if k not in LOCALE_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", stage.__name__, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=english,
    )


def test_cli_json_to_stdout_alone(stage: ModuleType, default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    done = run_stage(stage, base_url, "--json", "-", "-q", "--timeline")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    timeline = {url: (start, end) for url, start, end in doc["timeline"]}
    assert timeline.keys() == {f["url"] for f in doc["fetches"]}
    assert all(0 <= start <= end <= doc["elapsed_s"] for start, end in timeline.values())
    assert doc["stage"] == stage.__name__ and doc["interrupted"] is False
    assert {f["url"] for f in doc["fetches"]} == set(site.expected(base_url))
    assert "Finished" in done.stderr


def test_cli_without_root_crawls_the_built_in_site(stage: ModuleType) -> None:
    done = run_stage(stage, "-q")
    assert done.returncode == 0, done.stderr
    assert "Finished" in done.stdout and "built-in test site" in done.stderr


def test_cli_verbose_shows_the_crawler_not_the_test_sites_access_log(stage: ModuleType) -> None:
    """-v tells what the crawler does; the built-in site's line per request waits for -vv."""
    done = run_stage(stage, "--site-pages", "2", "-v")
    assert done.returncode == 0, done.stderr
    assert "INFO crawler: robots.txt" in done.stderr
    assert "aiohttp.access" not in done.stderr


def test_cli_usage_error_exits_2(stage: ModuleType) -> None:
    done = run_stage(stage, "--max-tasks", "0")
    assert done.returncode == 2
    assert "max_tasks must be >= 1 (got 0)" in done.stderr


def test_ctrl_c_prints_the_partial_report_and_exits_130(
    stage: ModuleType, ctrl_c_check: Callable[[str], dict[str, Any]]
) -> None:
    assert ctrl_c_check(stage.__name__)["stage"] == stage.__name__


def test_fail_on_records_the_error_and_the_crawl_goes_on(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    """The stack-ripping demo's switch: each stage records the bug and crawls on."""
    site, base_url = default_site
    result = stage.crawl([base_url], Options(fail_on="/traps/"))
    failed = {s.url for s in result.fetches if s.error and "ParseError" in s.error}
    assert base_url + "traps/" in failed
    assert all(s.status is None and s.tries == 1 for s in result.fetches if s.url in failed)
    pages = {url for url in site.expected(base_url) if "/p/" in url}
    assert pages and pages <= result.urls  # the generated pages were crawled all the same
