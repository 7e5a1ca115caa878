"""Exercise s1-read: stage 1 sends its request and reads the response by callbacks.

Task 1 is Fetcher._on_writable: send what the socket takes, keep the rest in the
Fetcher (state saved by hand), and register the next callback (the continuation).
Task 2 is Fetcher._on_readable: read once per call (and what a TLS socket holds
decrypted), feed the parser, and finish the try when the response is complete or broken.

The Task 1 tests watch what reaches the server and which callback the loop runs next,
so they do not need _on_readable.  Servers run in daemon threads on 127.0.0.1: raw
sockets the tests control, and the test site of shared/testsite.py.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable
from selectors import EVENT_READ, EVENT_WRITE
from typing import Any
from urllib.parse import urlsplit

import pytest
from reasons import reason
from stage1_harness import CRAWL_LIMIT_S, Harness, WatchedLoop, by_path, watch_crawls

import stage1_callbacks
from shared.crawling import Options
from shared.report import CrawlResult
from shared.testsite import ServerTLS, Site, serve
from shared.testsite.oracle import assert_matches_oracle
from shared.testsite.raw import links, page, raw_server, resetting_server
from stage1_callbacks import crawler as stage1_crawler
from stage1_callbacks.crawler import Fetcher

NO_ROBOTS = Options(ignore_robots=True, timeout=3)

# --- requests and records -----------------------------------------------------------------


def padded_requests(monkeypatch: pytest.MonkeyPatch, size: int) -> Callable[[str], bytes]:
    """Make every request carry a header of ``size`` bytes; return the new request_bytes.

    A request that big does not fit in the socket's buffers: send() takes part of it.
    """
    padding = b"X-Padding: " + b"p" * size + b"\r\n"
    original = stage1_crawler.request_bytes

    def request_bytes(url: str) -> bytes:
        return original(url).replace(b"\r\n", b"\r\n" + padding, 1)

    monkeypatch.setattr(stage1_crawler, "request_bytes", request_bytes)
    return request_bytes


def errors(result: CrawlResult) -> str:
    """What went wrong in a crawl, from its records: one clause per failed fetch."""
    failed = [
        reason("crawl.failed-with", url=urlsplit(s.url).path, error=s.error)
        for s in result.fetches
        if s.error
    ]
    return "; ".join(failed) or reason("s1-read.no-failure")


# --- no crawl hangs ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def loops(monkeypatch: pytest.MonkeyPatch) -> list[WatchedLoop]:
    """Give every stage 1 crawl of this module a deadline, rather than let it hang."""
    return watch_crawls(monkeypatch, CRAWL_LIMIT_S, reason("s1-read.too-long"))


# --- Task 1: _on_writable ----------------------------------------------------------------


class RefusingSocket(socket.socket):
    """A real socket (the loop can watch it) whose send() raises ``error``; a sendall()
    raises it too, and is remembered."""

    error: OSError
    sendall_called = False

    def send(self, data: Any, flags: int = 0) -> int:
        raise self.error

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.sendall_called = True
        raise self.error


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize(
    ("error", "waits"),
    [
        (BlockingIOError(11, "plain socket full"), True),
        (ssl.SSLWantWriteError(3, "TLS socket full"), True),
        (ConnectionResetError(104, "reset by the server"), False),
    ],
    ids=["blocking-io-error", "ssl-want-write-error", "connection-reset"],
)
def test_a_full_socket_waits_and_a_broken_one_fails_the_try(
    monkeypatch: pytest.MonkeyPatch, error: OSError, waits: bool
) -> None:
    """ "Not now" (either kind of socket) keeps the try waiting; any other OSError ends it."""
    failed: list[Exception] = []
    monkeypatch.setattr(Fetcher, "_fail", lambda self, exc: failed.append(exc))
    url = "http://127.0.0.1:9/"
    crawler = Harness(url, NO_ROBOTS)
    fetcher = crawler.fetchers[url] = Fetcher(crawler, url, 10)
    left, right = socket.socketpair()
    sock = RefusingSocket(left.family, left.type, fileno=left.detach())
    sock.error = error
    fetcher.sock, fetcher.unsent = sock, b"GET / HTTP/1.1\r\n\r\n"
    try:
        crawler.loop.register(sock, EVENT_WRITE, fetcher._on_writable)
        try:
            fetcher._on_writable(crawler.loop.selector.get_key(sock), EVENT_WRITE)
        except OSError as raised:
            pytest.fail(reason("s1-read.send-error-escaped", error=repr(raised)))
        assert not sock.sendall_called, reason("s1-read.sendall")
        key = crawler.loop.selector.get_map().get(sock.fileno())
        waiting = key is not None and (key.events, key.data) == (EVENT_WRITE, fetcher._on_writable)
        if waits:
            assert not failed and waiting, reason(
                "s1-read.full-is-not-failed", error=repr(error), failed=repr(failed)
            )
            assert fetcher.unsent == b"GET / HTTP/1.1\r\n\r\n", reason("s1-read.full-sent")
        else:
            assert failed == [error], reason("s1-read.send-error-lost", error=repr(error))
    finally:
        crawler.loop.close()
        sock.close()
        right.close()


@pytest.mark.task(taskno=1)
def test_a_request_bigger_than_the_socket_buffer_goes_out_whole_in_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """send() takes what fits; the rest waits in the Fetcher for the next writable event."""
    request_bytes = padded_requests(monkeypatch, 8 * 1024 * 1024)
    writable: list[int] = []  # bytes still unsent at each call
    readable: list[tuple[int, int]] = []  # (mask, bytes still unsent) at each call
    on_writable, on_readable = Fetcher._on_writable, Fetcher._on_readable

    def watch_writable(self: Fetcher, key: Any, mask: int) -> None:
        writable.append(len(self.unsent))
        on_writable(self, key, mask)

    def watch_readable(self: Fetcher, key: Any, mask: int) -> None:
        readable.append((mask, len(self.unsent)))
        on_readable(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_writable", watch_writable)
    monkeypatch.setattr(Fetcher, "_on_readable", watch_readable)
    received: list[bytes] = []
    with raw_server(lambda path: page("<p>big request</p>"), received) as base:
        stage1_callbacks.crawl([base], Options(ignore_robots=True, timeout=3, max_tries=1))
    assert len(writable) > 1, reason("s1-read.one-send", count=len(writable))
    assert received, reason("s1-read.the-server-received-nothing")
    sent = received[0]
    assert len(sent) == len(request_bytes(base)), reason(
        "s1-read.the-server-received-bytes-of",
        sent_count=len(sent),
        value3=len(request_bytes(base)),
    )
    assert sent == request_bytes(base), reason("s1-read.the-request-arrived-garbled")
    # The continuation: once nothing is left to send, wait for the response.
    assert readable, reason("s1-read.the-loop-never-called-on")
    assert readable[0] == (EVENT_READ, 0), reason("s1-read.on-readable-ran-before-the")


@pytest.mark.task(taskno=1)
def test_a_small_request_goes_out_and_the_response_is_awaited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The usual case: the socket takes the whole request, then the loop waits to read."""
    readable: list[tuple[int, int]] = []
    on_readable = Fetcher._on_readable

    def watch_readable(self: Fetcher, key: Any, mask: int) -> None:
        readable.append((mask, len(self.unsent)))
        on_readable(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_readable", watch_readable)
    received: list[bytes] = []
    with raw_server(lambda path: page("<p>hello</p>"), received) as base:
        stage1_callbacks.crawl([base], Options(ignore_robots=True, timeout=3, max_tries=1))
    assert received == [stage1_crawler.request_bytes(base)], reason(
        "s1-read.the-server-received-not-the", received=received
    )
    assert readable and readable[0] == (EVENT_READ, 0), reason("s1-read.once-the-request-is-all")


@pytest.mark.task(taskno=1)
def test_a_connection_reset_while_sending_is_a_failed_try(monkeypatch: pytest.MonkeyPatch) -> None:
    """send() raising (the server reset the connection) ends the try; the next try follows."""
    padded_requests(monkeypatch, 16 * 1024 * 1024)  # far more than the buffers hold
    with resetting_server() as base:
        result = stage1_callbacks.crawl([base], Options(ignore_robots=True, max_tries=2))
    [stat] = result.fetches
    assert stat.status is None and stat.tries == 2, reason(
        "s1-read.an-oserror-from-send-is", stat=stat
    )
    assert stat.error is not None, reason("s1-read.the-reset-try-should-be", stat=stat)
    assert stat.error.split(":")[0] in {"ConnectionResetError", "BrokenPipeError"}, reason(
        "s1-read.the-try-failed-with-not", value1=stat.error
    )


# --- Task 2: _on_readable ----------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_a_response_that_arrives_in_pieces_is_put_together() -> None:
    """Each readable event brings part of it; the parser is fed until it is complete."""
    answers = {"/": links("/next", filler=50_000), "/next": page("<p>the end</p>")}
    with raw_server(lambda path: answers[path], pieces=5) as base:
        result = stage1_callbacks.crawl([base], NO_ROBOTS)
    records = by_path(result, base)
    assert set(records) == {"/", "/next"}, reason(
        "s1-read.pieces", records=sorted(records), errors=errors(result)
    )
    root = records["/"]
    body_size = len(answers["/"].partition(b"\r\n\r\n")[2])
    assert (root.status, root.size, root.num_urls, root.error) == (200, body_size, 1, None), reason(
        "s1-read.the-page-arrived-in-pieces", root=root
    )
    assert records["/next"].status == 200, reason(
        "s1-read.next-was-recorded-as", value1=records["/next"]
    )


@pytest.mark.task(taskno=2)
def test_bytes_waiting_in_the_tls_buffer_are_read_without_waiting_for_the_socket(
    monkeypatch: pytest.MonkeyPatch, lingering_tls_server: str, test_ca: ServerTLS
) -> None:
    """Read on while a TLS socket has bytes pending: it keeps decrypted bytes select() cannot see.

    Reading 100 bytes at a time leaves most of a TLS record in the SSL object's buffer,
    and this server sends nothing more (nor closes) once its page is out.
    """
    monkeypatch.setattr(stage1_crawler, "CHUNK", 100)
    options = Options(cafile=test_ca.cafile, ignore_robots=True, timeout=5, max_tries=1)
    started = time.monotonic()
    result = stage1_callbacks.crawl([lingering_tls_server], options)
    [stat] = result.fetches
    assert not (stat.error or "").startswith(("SSLWantReadError", "SSLWantWriteError")), reason(
        "s1-read.tls-not-now-failed", error=stat.error
    )
    assert (stat.status, stat.size, stat.error) == (200, 5026, None), reason(
        "s1-read.the-tls-page-was-recorded", stat=stat
    )
    assert time.monotonic() - started < 4, reason("s1-read.it-waited-for-the-timeout")


@pytest.mark.task(taskno=2)
def test_a_server_faster_than_the_parser_cannot_keep_the_loop() -> None:
    """Interim heads poured out without end: the try ends at its timeout, the page beside it is in.

    A callback that read until the socket would block would never return to the loop
    while this server pours (8 s here): the timer of --timeout could not fire, and the
    page beside it, answered after 1 s, would wait and time out too.
    """
    site = Site(pages=1, traps=False, endless=True, endless_s=8, wide=1, wide_delay=1.0)
    with serve(site) as base:
        flood, beside = base + "endless/interim-flood", base + "wide/0"
        result = stage1_callbacks.crawl([flood, beside], Options(timeout=2, max_tries=1))
    records = {stat.url: stat for stat in result.fetches}
    assert records[beside].status == 200, reason(
        "s1-read.the-page-beside-the-flood", value1=records[beside]
    )
    assert "TimeoutError" in (records[flood].error or ""), reason(
        "s1-read.the-flood-was-recorded-as", value1=records[flood]
    )


@pytest.mark.task(taskno=2)
def test_answers_cut_short_or_not_http_are_failed_tries() -> None:
    """The parser's WireError, and a peer that closes too soon, end the try; it is retried."""
    answers = {
        "/": links("/garbage", "/short", "/nothing"),
        "/garbage": b"SPAM SPAM SPAM\r\n\r\n",
        "/short": b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"y" * 100,
        "/nothing": b"",
    }
    with raw_server(lambda path: answers[path]) as base:
        result = stage1_callbacks.crawl([base], Options(ignore_robots=True, max_tries=2))
    records = by_path(result, base)
    assert set(records) == set(answers), reason(
        "s1-read.the-crawl-recorded-not",
        value1=sorted(records),
        value3=sorted(answers),
        value5=errors(result),
    )
    assert records["/"].status == 200, reason(
        "s1-read.was-recorded-as", value1=records["/"], value3=errors(result)
    )
    for path in ("/garbage", "/short", "/nothing"):
        stat = records[path]
        assert stat.status is None and stat.tries == 2, reason(
            "s1-read.was-recorded-as-a-broken", path=path, stat=stat
        )
        assert stat.error is not None and stat.error.startswith("WireError"), reason(
            "s1-read.failed-with-not-the-parser", path=path, value2=stat.error
        )


@pytest.mark.task(taskno=2)
def test_hostile_pages_end_as_the_oracles_records() -> None:
    """A reset mid-body, a short body, garbage, silence, 20 MB and random bytes."""
    site = Site(pages=3, traps=False, hostile=True)
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(timeout=0.5, max_tries=2))
        assert_matches_oracle(result, site.expected(base, max_tries=2))


@pytest.mark.task(taskno=2)
def test_the_default_site_gives_the_oracles_records(default_site: tuple[Site, str]) -> None:
    """Redirects, errors, a page that drops the connection twice, a 1 MB page, charsets."""
    site, base = default_site
    result = stage1_callbacks.crawl([base], Options())
    assert_matches_oracle(result, site.expected(base))
