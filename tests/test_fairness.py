"""No server can starve the loop: --timeout bounds every try, whatever the server sends.

The test site's endless cases (shared/testsite/endless.py) pour bytes out faster than
any parser takes them, or dribble them, or never finish a header.  A fetch that read on
while bytes were waiting would keep its loop for itself: no timer would fire, and every
other fetch would wait with it.  Each stage must end each try at its timeout (plus a
small margin), serve the pages beside it meanwhile, and record what the oracle says.

The margin is for a busy machine, not for speed: the failure these tests exist for
holds a try for as long as the site lets it (15 s here), or forever.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from shared.crawling import Options
from shared.report import CrawlResult, FetchStatistic
from shared.testsite import TRAPS, ServerTLS, Site, serve
from shared.testsite.endless import ENDLESS, ENDLESS_FAILING, KEEPALIVE_PAGES
from shared.testsite.oracle import assert_matches_oracle, expected_fields, fields
from shared.testsite.traps import HANGUP_KEPT_PAGES, HOSTILE
from shared.tools.instruments import watching
from shared.tools.instruments.timeline import Timeline

TIMEOUT_S = 2.0  # the --timeout of these crawls
MARGIN_S = 1.0  # what a try may run past its timeout: a turn of a busy loop, not a flood
BOUND_S = 60  # far above any run here: only a hang ever reaches it


def held(site: Site, count: int) -> list[tuple[str, float]]:
    """The site's ``held`` once it has ``count`` entries: a hang-up takes the server a moment."""
    deadline = time.monotonic() + BOUND_S
    while len(site.held) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return list(site.held)


def timed_crawl(
    stage: ModuleType, roots: list[str], options: Options
) -> tuple[CrawlResult, dict[str, float]]:
    """Crawl with a Timeline watching; the result, and how long each URL's fetch took."""
    timeline = Timeline()
    with watching(timeline):
        result = stage.crawl(roots, options)
    return result, {url: end - start for url, start, end in timeline.timeline}


@pytest.fixture
def busy_core() -> Iterator[None]:
    """Another process keeps a core busy meanwhile, as on a loaded machine."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("kind", ["interim-flood", "tiny-chunks"])
def test_a_flood_ends_at_its_timeout_and_the_page_beside_it_is_served(
    stage: ModuleType, kind: str, busy_core: None
) -> None:
    """--timeout 2 --max-tries 1, a flood of 15 s and a page beside it: the page is served.

    With a core busy elsewhere, a turn of the loop takes longer: one that takes in a whole
    flood of small responses at once (stage 3's, before it read less at a time) runs past
    the margin.
    """
    # The page beside the flood answers after 1 s, well inside the flood: it is served
    # only if the loop goes on polling the other sockets while the flood pours in.
    site = Site(pages=1, traps=False, endless=True, endless_s=15, wide=1, wide_delay=1.0)
    with serve(site) as base_url:
        flood, page = base_url + ENDLESS[kind].lstrip("/"), base_url + "wide/0"
        started = time.monotonic()
        result, took = timed_crawl(stage, [flood, page], Options(timeout=TIMEOUT_S, max_tries=1))
        elapsed = time.monotonic() - started
        ends = dict(held(site, 1))
    records = result.by_url()
    assert records[page].status == 200 and records[page].error is None, records[page]
    assert records[flood].status is None and records[flood].tries == 1
    assert "Timeout" in (records[flood].error or ""), records[flood].error  # its own timeout
    assert took[flood] <= TIMEOUT_S + MARGIN_S, took
    assert ends[ENDLESS[kind]] <= TIMEOUT_S + MARGIN_S, ends  # the server saw it hang up
    assert elapsed <= TIMEOUT_S + MARGIN_S + 1, f"the crawl took {elapsed:.1f} s"


def test_a_flood_over_https_ends_at_its_timeout_too(stage: ModuleType, test_ca: ServerTLS) -> None:
    """Over TLS a recv() returns one record at a time, and what a record holds beyond it waits
    in the TLS layer, unseen by select(): read at once, but never more than that."""
    site = Site(pages=1, traps=False, endless=True, endless_s=15, wide=1, wide_delay=1.0)
    options = Options(timeout=TIMEOUT_S, max_tries=1, cafile=test_ca.cafile)
    with serve(site, tls=test_ca) as base_url:
        flood, page = base_url + ENDLESS["interim-flood"].lstrip("/"), base_url + "wide/0"
        result, took = timed_crawl(stage, [flood, page], options)
        ends = dict(held(site, 1))
    records = result.by_url()
    assert records[page].status == 200 and records[page].error is None, records[page]
    assert "Timeout" in (records[flood].error or ""), records[flood].error
    assert took[flood] <= TIMEOUT_S + MARGIN_S, took
    assert ends[ENDLESS["interim-flood"]] <= TIMEOUT_S + MARGIN_S, ends  # the site saw it go


def test_a_fetch_ends_within_its_tries_times_timeout_and_delay(stage: ModuleType) -> None:
    """Two tries of a flood, --delay before each: the fetch is bounded by what it was allowed."""
    site = Site(pages=1, traps=False, endless=True, endless_s=15)
    timeout, delay, tries = 1.0, 0.5, 2
    with serve(site) as base_url:
        flood = base_url + ENDLESS["interim-flood"].lstrip("/")
        options = Options(timeout=timeout, delay=delay, max_tries=tries, ignore_robots=True)
        result, took = timed_crawl(stage, [flood], options)
    [record] = result.fetches
    assert (record.status, record.tries) == (None, tries) and "Timeout" in (record.error or "")
    assert took[flood] <= tries * (timeout + delay) + MARGIN_S, took


def test_the_endless_catalogue_gives_the_oracles_records(stage: ModuleType) -> None:
    """Every endless case, twice each, beside healthy pages: records, and every try bounded."""
    site = Site(pages=6, traps=False, endless=True, endless_s=15)
    timeout, tries = 3.0, 2  # room for healthy pages on a busy machine, floods pouring beside them
    with serve(site) as base_url:
        result, took = timed_crawl(stage, [base_url], Options(timeout=timeout, max_tries=tries))
        assert_matches_oracle(result, site.expected(base_url, max_tries=tries))
        ends = held(site, tries * len(ENDLESS_FAILING))
    failing = {base_url + ENDLESS[name].lstrip("/") for name in ENDLESS_FAILING}
    assert failing <= result.urls
    for url, seconds in took.items():
        record = result.by_url()[url]
        assert seconds <= record.tries * timeout + MARGIN_S, (url, seconds, record)
    # The server's side: each connection to an endless case ended within a try's bound.
    assert len(ends) == tries * len(ENDLESS_FAILING), ends
    assert max(seconds for _, seconds in ends) <= timeout + MARGIN_S, ends


def test_a_server_that_never_stops_cannot_keep_a_stage_from_finishing(
    stage: ModuleType, tmp_path: Path
) -> None:
    """The endless cases with no bound of the site's: the stage, a process, ends by itself."""
    site = Site(pages=3, traps=False, endless=True, endless_s=None)
    out = tmp_path / "crawl.json"
    argv = [sys.executable, "-m", stage.__name__, "--timeout", str(TIMEOUT_S)]
    argv += ["--max-tries", "1", "--json", str(out), "-q"]
    with serve(site) as base_url:
        proc = subprocess.Popen([*argv, base_url], stdout=subprocess.DEVNULL)
        try:
            returncode = proc.wait(timeout=BOUND_S)
        finally:
            proc.kill()
            proc.wait()
        ends = held(site, len(ENDLESS_FAILING))
    assert returncode == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    fetches = [FetchStatistic(**fetch) for fetch in doc["fetches"]]
    result = CrawlResult(doc["stage"], doc["roots"], fetches, doc["elapsed_s"])
    assert_matches_oracle(result, site.expected(base_url, max_tries=1))
    assert len(ends) == len(ENDLESS_FAILING)
    assert max(seconds for _, seconds in ends) <= TIMEOUT_S + MARGIN_S, ends


def test_no_url_fails_against_a_server_that_closes_each_connection_unannounced(
    stage: ModuleType,
) -> None:
    """One response per connection, no `Connection: close`, and --max-tries 1: no URL lost.

    Redirects and their targets, one right after the other, are where a client that
    keeps connections alive would take a dead one from its pool: the traps have a dozen.
    No stage keeps one: each request has a connection of its own, so none meets a close.
    """
    site = Site(pages=30, silent_close=True)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tries=1))
        assert_matches_oracle(result, site.expected(base_url, max_tries=1))
    failed = {stat.url.removeprefix(base_url) for stat in result.fetches if stat.error}
    assert failed == {"traps/flaky"}  # dropped on purpose, on its first two requests


# --- the test site's side ------------------------------------------------------------------


def test_the_site_ends_a_flood_nobody_reads_after_its_bound() -> None:
    """A client that sends a request and never reads: the site itself ends the flood."""
    site = Site(pages=1, traps=False, endless=True, endless_s=0.5)
    with serve(site) as base_url, socket.create_connection(("127.0.0.1", port(base_url))) as sock:
        sock.sendall(b"GET /endless/interim-flood HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.5)  # the site's bound passes; we read nothing meanwhile
        sock.settimeout(BOUND_S)
        first = sock.recv(64)
        while sock.recv(1 << 16):  # what the site wrote before the bound, then its close
            pass
    assert first.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n")
    [(path, seconds)] = held(site, 1)
    assert path == ENDLESS["interim-flood"] and 0.5 <= seconds < 0.5 + MARGIN_S


def test_each_endless_case_sends_what_its_name_says() -> None:
    site = Site(pages=1, traps=False, endless=True, endless_s=3)
    with serve(site) as base_url:

        def first_bytes(name: str, wanted: int) -> bytes:
            """The first `wanted` bytes of a case's answer, or all of it if it ends first."""
            with socket.create_connection(("127.0.0.1", port(base_url)), timeout=10) as sock:
                sock.sendall(f"GET {ENDLESS[name]} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                got = b""
                while len(got) < wanted and (chunk := sock.recv(1 << 16)):
                    got += chunk
                return got

        assert (
            first_bytes("tiny-chunks", 5000).count(b"\r\n1;ext=" + b"x" * 100 + b"\r\n<\r\n") >= 3
        )
        assert first_bytes("endless-head", 100_000).startswith(b"HTTP/1.1 200 OK\r\nX-Endless: aa")
        started = time.monotonic()
        assert first_bytes("trickle", 2) == b"HT"
        assert time.monotonic() - started >= 0.9  # a byte a second
        assert first_bytes("close-before-head", 1000) == b"HTTP/1.1 200 OK\r\nContent-"
        with pytest.raises(ConnectionResetError):
            first_bytes("reset-mid-body", 200_000)  # 2,000 bytes of its body, then a reset
    assert {path for path, _ in held(site, 5)} == {
        ENDLESS[name]
        for name in (
            "tiny-chunks",
            "endless-head",
            "trickle",
            "close-before-head",
            "reset-mid-body",
        )
    }


def test_a_silent_close_answers_one_request_per_connection() -> None:
    site = Site(pages=3, traps=False, silent_close=True)
    with serve(site) as base_url:
        conn = http.client.HTTPConnection("127.0.0.1", port(base_url), timeout=10)
        conn.request("GET", "/p/1")
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Connection") is None
        response.read()
        conn.request("GET", "/p/2")  # on the same connection, kept alive as far as it knows
        with pytest.raises(http.client.RemoteDisconnected):
            conn.getresponse()
        conn.close()
    assert dict(site.requests) == {"/p/1": 1}  # the second request never counted as one


def test_the_flaky_page_hangs_up_on_a_new_connection_and_is_unseen_on_a_kept_one() -> None:
    """A stale kept-alive connection and a server that hung up: the site tells them apart."""
    site = Site(pages=3)
    with serve(site) as base_url:
        conn = http.client.HTTPConnection("127.0.0.1", port(base_url), timeout=10)
        conn.request("GET", "/p/1")
        conn.getresponse().read()
        conn.request("GET", TRAPS["flaky"])  # on the same connection, kept alive
        with pytest.raises(http.client.RemoteDisconnected):
            conn.getresponse()
        conn.close()
        assert TRAPS["flaky"] not in site.requests  # closed as a stale one: never seen
        for seen in (1, 2):  # each on a new connection: seen, and dropped
            conn = http.client.HTTPConnection("127.0.0.1", port(base_url), timeout=10)
            conn.request("GET", TRAPS["flaky"])
            with pytest.raises(http.client.RemoteDisconnected):
                conn.getresponse()
            conn.close()
            assert site.requests[TRAPS["flaky"]] == seen


def test_keepalive_pages_close_their_connection_and_link_to_more() -> None:
    expected = Site(pages=1, traps=False, endless=True).expected("http://127.0.0.1:1/")
    for path in (ENDLESS["keepalive-silent"], *KEEPALIVE_PAGES):
        record = expected["http://127.0.0.1:1" + path]
        assert (record.status, record.tries, record.error) == (200, 1, False)
    assert expected["http://127.0.0.1:1" + ENDLESS["keepalive-silent"]].num_urls == 3


def port(base_url: str) -> int:
    """The port of a base URL "http://127.0.0.1:PORT/"."""
    return int(base_url.rstrip("/").rpartition(":")[2])


# --- every stage counts a try as a request the server may have read ------------------------
# Stage 3 counts them with an aiohttp middleware, on a connection per request: `nox -s
# aiohttp_floor` runs these (and the rest of this file) on the oldest aiohttp allowed.


def test_a_dropped_connection_costs_one_try_and_one_request(stage: ModuleType) -> None:
    """The flaky page hangs up on its first two requests: three tries, three requests.

    One worker, the flaky page reached by a link, each try on a new connection, in every
    stage.  aiohttp alone sends a request the server hung up on a second time, unasked:
    2 tries, 3 requests.
    """
    site = Site(pages=1)
    with serve(site) as base_url:
        errors, flaky = (base_url + TRAPS[name].lstrip("/") for name in ("errors", "flaky"))
        result = stage.crawl([errors], Options(ignore_robots=True, max_tries=4, max_tasks=1))
    record = result.by_url()[flaky]
    assert (record.status, record.tries) == (200, 3)
    assert site.requests[TRAPS["flaky"]] == 3


def test_a_request_the_server_read_and_hung_up_on_is_a_try(stage: ModuleType) -> None:
    """--max-tries 1, one worker: the server sees each hangup-kept page once, answered once.

    Each hangup-kept page keeps its connection open and hangs up on the next request sent
    on it, after counting it.  A crawler that reused that connection would see a failed
    try, or would send the page again unrecorded; a connection per request sees neither.
    """
    site = Site(pages=1, traps=False, hostile=True)
    with serve(site) as base_url:
        start = base_url + HOSTILE["hangup-kept"].lstrip("/")
        options = Options(ignore_robots=True, max_tries=1, max_tasks=1)
        result = stage.crawl([start], options)
        expected = site.expected(base_url, max_tries=1)
    kept = [HOSTILE["hangup-kept"], *HANGUP_KEPT_PAGES]
    origin = base_url.rstrip("/")
    assert {origin + path for path in kept} == result.urls
    for path in kept:
        got = result.by_url()[origin + path]
        assert fields(got) == expected_fields(expected[origin + path]), got
    assert dict(site.requests) == dict.fromkeys(kept, 1)


def test_a_hangup_kept_page_counts_the_next_request_on_its_connection_then_closes() -> None:
    site = Site(pages=1, traps=False, hostile=True)
    with serve(site) as base_url:
        conn = http.client.HTTPConnection("127.0.0.1", port(base_url), timeout=10)
        conn.request("GET", HOSTILE["hangup-kept"])
        assert conn.getresponse().read().count(b"<a href") == len(HANGUP_KEPT_PAGES)
        conn.request("GET", HANGUP_KEPT_PAGES[0])  # on the same connection, kept alive
        with pytest.raises(http.client.RemoteDisconnected):
            conn.getresponse()
        conn.close()
    assert dict(site.requests) == {HOSTILE["hangup-kept"]: 1, HANGUP_KEPT_PAGES[0]: 1}
