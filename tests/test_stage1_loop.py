"""Tests for stage 1: the hand-made event loop, and sockets that never leak.

Plain synchronous tests.  Small servers run in daemon threads on 127.0.0.1, because
the crawler blocks the test's thread in its own select() loop.  These crawls ignore
robots.txt, to keep to one socket per URL; tests/test_crawl.py checks robots.txt.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from stage1_harness import WatchedLoop, watch_crawls

import stage1_callbacks
from shared.crawling import Options
from shared.log import ERROR, Record
from shared.testsite import ServerTLS, Site, serve
from shared.testsite.raw import closed_port_url, links, page, raw_server, silent_server
from stage1_callbacks import crawler as stage1_crawler
from stage1_callbacks.crawler import Crawler, Fetcher
from stage1_callbacks.loop import Callback, EventLoop

NO_ROBOTS = Options(ignore_robots=True)

# --- watching the crawler's loop ------------------------------------------------------


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> list[WatchedLoop]:
    """The loops the stage 1 crawler makes during the test (one per crawl)."""
    return watch_crawls(monkeypatch)


def assert_all_closed(loop: WatchedLoop) -> None:
    """Nothing is left in the selector, every socket is closed, and the selector too."""
    assert loop.sockets, "the crawl opened no socket at all"
    assert loop.left_registered == {}
    assert all(sock.fileno() == -1 for sock in loop.sockets)
    assert loop.selector.get_map() is None  # closed


def open_fds() -> int:
    """Count this process's open file descriptors."""
    return len(os.listdir("/proc/self/fd"))


def wait_for(condition: Callable[[], bool], limit: float = 2.0) -> bool:
    """Poll until condition() is true or ``limit`` seconds have passed; return the last answer."""
    deadline = time.monotonic() + limit
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


# --- the event loop on its own ----------------------------------------------------------


def test_timers_fire_in_time_order_and_a_cancelled_one_never() -> None:
    loop = EventLoop()
    fired: list[str] = []
    loop.call_later(0.03, fired.append, "late")
    loop.call_later(0.01, fired.append, "early-1")
    cancelled = loop.call_later(0.02, fired.append, "cancelled")
    loop.call_later(0.01, fired.append, "early-2")  # same time: set second, runs second
    loop.call_soon(fired.append, "soon")
    cancelled.cancel()
    loop.run_until(lambda: "late" in fired)
    loop.close()
    assert fired == ["soon", "early-1", "early-2", "late"]


def test_run_until_with_nothing_to_wait_for_raises_instead_of_hanging() -> None:
    loop = EventLoop()
    with pytest.raises(RuntimeError, match="nothing to wait for"):
        loop.run_until(lambda: False)
    loop.close()


def test_an_exception_in_a_callback_goes_to_the_handler_with_that_callback() -> None:
    caught: list[tuple[Exception, Callback]] = []
    loop = EventLoop(lambda exc, callback: caught.append((exc, callback)))
    ran: list[str] = []

    def bad() -> None:
        raise ValueError("bad callback")

    loop.call_soon(bad)
    loop.call_soon(ran.append, "after")
    loop.run_until(lambda: bool(ran))
    loop.close()
    assert ran == ["after"]  # the loop went on
    [(exc, callback)] = caught
    assert isinstance(exc, ValueError) and callback is bad


def test_the_default_handler_logs_a_traceback_that_starts_in_the_loop(
    logged: list[Record],
) -> None:
    loop = EventLoop()

    def bad() -> None:
        raise ValueError("bad callback")

    loop.call_soon(bad)
    loop.call_later(0.01, lambda: None)
    loop.run_until(lambda: bool(logged))
    loop.close()
    [record] = logged
    assert record.level == ERROR and record.exc is not None
    frames = [frame.name for frame in traceback.extract_tb(record.exc.__traceback__)]
    # Stack ripping: the loop and the callback, and nothing of whoever scheduled it.
    assert frames == ["_run", "bad"]


def test_a_socket_unregistered_earlier_in_the_same_turn_gets_no_callback() -> None:
    loop = EventLoop()
    pairs = [socket.socketpair(), socket.socketpair()]
    ran: list[int] = []

    def make_callback(me: int) -> Callback:
        def callback(key: object, mask: int) -> None:
            ran.append(me)
            loop.unregister(pairs[1 - me][0])  # the other socket: its event is stale now

        return callback

    for i, (reader, writer) in enumerate(pairs):
        writer.send(b"x")
        loop.register(reader, selectors.EVENT_READ, make_callback(i))
    loop.run_until(lambda: bool(ran))
    loop.close()
    for pair in pairs:
        for sock in pair:
            sock.close()
    assert len(ran) == 1  # both were ready, but the first callback unregistered the second


def test_a_timer_cancelled_by_a_socket_callback_of_the_same_turn_does_not_fire() -> None:
    loop = EventLoop()
    reader, writer = socket.socketpair()
    fired: list[str] = []
    timer = loop.call_soon(fired.append, "timer")  # due at once, like a timeout that ran out

    def on_readable(key: object, mask: int) -> None:
        fired.append("socket")
        timer.cancel()  # the response beat its own timeout
        loop.unregister(reader)

    writer.send(b"x")
    loop.register(reader, selectors.EVENT_READ, on_readable)
    loop.run_until(lambda: bool(fired))
    loop.close()
    reader.close()
    writer.close()
    assert fired == ["socket"]


# --- every path closes its socket -------------------------------------------------------


def test_success_closes_the_socket(loops: list[WatchedLoop]) -> None:
    with raw_server(lambda path: page("<p>hello</p>")) as base:
        result = stage1_callbacks.crawl([base], NO_ROBOTS)
    [stat] = result.fetches
    assert (stat.status, stat.error, stat.tries) == (200, None, 1)
    assert_all_closed(loops[0])


def test_connection_refused_closes_the_socket_and_counts_every_try(
    loops: list[WatchedLoop],
) -> None:
    result = stage1_callbacks.crawl([closed_port_url()], Options(max_tries=3, ignore_robots=True))
    [stat] = result.fetches
    assert stat.status is None and stat.tries == 3
    assert stat.error is not None and "ConnectionRefusedError" in stat.error
    assert len(loops[0].sockets) == 3  # a new socket per try
    assert_all_closed(loops[0])


def test_timeout_closes_the_socket_and_is_a_failed_try(loops: list[WatchedLoop]) -> None:
    with silent_server() as base:
        start = time.monotonic()
        result = stage1_callbacks.crawl(
            [base], Options(timeout=0.2, max_tries=2, ignore_robots=True)
        )
        elapsed = time.monotonic() - start
    [stat] = result.fetches
    assert stat.status is None and stat.tries == 2
    assert stat.error is not None and stat.error.startswith("TimeoutError")
    assert 0.4 <= elapsed < 5  # two timeouts of 0.2 s; the upper bound only stops a hang
    assert_all_closed(loops[0])


def test_a_garbage_answer_is_a_failed_try(loops: list[WatchedLoop]) -> None:
    with raw_server(lambda path: b"SPAM SPAM SPAM\r\n\r\n") as base:
        result = stage1_callbacks.crawl([base], Options(max_tries=2, ignore_robots=True))
    [stat] = result.fetches
    assert stat.status is None and stat.tries == 2
    assert stat.error is not None and stat.error.startswith("WireError")
    assert_all_closed(loops[0])


def test_a_request_bigger_than_the_socket_buffer_is_sent_in_pieces(
    loops: list[WatchedLoop], monkeypatch: pytest.MonkeyPatch
) -> None:
    padding = "X-Padding: " + "p" * (8 * 1024 * 1024) + "\r\n"
    original = stage1_crawler.request_bytes
    monkeypatch.setattr(
        stage1_crawler,
        "request_bytes",
        lambda url: original(url).replace(b"\r\n", b"\r\n" + padding.encode(), 1),
    )
    calls: list[int] = []
    on_writable = Fetcher._on_writable

    def counting(self: Fetcher, key: Any, mask: int) -> None:
        calls.append(len(self.unsent))
        on_writable(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_writable", counting)
    with raw_server(lambda path: page("<p>big request</p>")) as base:
        result = stage1_callbacks.crawl([base], NO_ROBOTS)
    [stat] = result.fetches
    assert stat.status == 200
    assert len(calls) > 1  # the socket took the request in more than one send()
    assert_all_closed(loops[0])


def test_an_exception_in_a_callback_is_recorded_for_its_url_and_the_crawl_goes_on(
    loops: list[WatchedLoop], monkeypatch: pytest.MonkeyPatch, logged: list[Record]
) -> None:
    pages = {"/": links("/a", "/b", "/c"), "/a": links("/e"), "/b": links("/d")}
    original = Crawler.parse_links

    def parse_links(self: Crawler, url: str, text: str) -> set[str]:
        if url.endswith("/b"):
            raise RuntimeError("parse error")
        return original(self, url, text)

    monkeypatch.setattr(Crawler, "parse_links", parse_links)
    with raw_server(lambda path: pages.get(path, page("<p>leaf</p>"))) as base:
        result = stage1_callbacks.crawl([base], NO_ROBOTS)
    by_path = {stat.url.removeprefix(base[:-1]): stat for stat in result.fetches}
    assert set(by_path) == {"/", "/a", "/b", "/c", "/e"}  # /d only /b links to
    assert by_path["/b"].error == "RuntimeError: parse error"
    assert by_path["/b"].tries == 1
    assert all(by_path[p].status == 200 for p in ("/", "/a", "/c", "/e"))
    assert not result.interrupted
    assert_all_closed(loops[0])
    # Stack ripping: the traceback begins in the loop and shows the callback chain
    # from the readable socket on, but nothing of work() or fetch(), which began it.
    [error] = [r for r in logged if r.message.startswith("while fetching")]
    assert error.level == ERROR and error.exc is not None
    frames = [frame.name for frame in traceback.extract_tb(error.exc.__traceback__)]
    assert frames[:2] == ["_run", "_on_readable"]
    assert "work" not in frames and "fetch" not in frames


def test_ctrl_c_closes_every_socket_and_returns_the_partial_result(
    loops: list[WatchedLoop], monkeypatch: pytest.MonkeyPatch
) -> None:
    on_connected = Fetcher._on_connected
    connected: list[str] = []

    def interrupting(self: Fetcher, key: Any, mask: int) -> None:
        on_connected(self, key, mask)
        connected.append(self.url)
        if len(connected) == 3:
            raise KeyboardInterrupt  # no Exception: the loop lets it through

    monkeypatch.setattr(Fetcher, "_on_connected", interrupting)
    with silent_server() as base:
        before = open_fds()
        roots = [base + name for name in ("a", "b", "c", "d")]
        result = stage1_callbacks.crawl(roots, Options(max_tasks=4, ignore_robots=True))
        assert wait_for(lambda: open_fds() == before)
    assert result.interrupted
    assert {stat.url for stat in result.fetches} == set(roots)  # all four were in flight
    assert all(stat.error == "interrupted before the response" for stat in result.fetches)
    assert_all_closed(loops[0])


def test_a_crawl_leaves_no_file_descriptor_open() -> None:
    pages = {"/": links("/a", "/missing", "/junk"), "/a": links("/")}
    answers = {"/missing": page("gone", 404), "/junk": b"NOT HTTP\r\n\r\n"}
    with raw_server(lambda path: pages.get(path) or answers[path]) as base:
        before = open_fds()
        result = stage1_callbacks.crawl(
            [base, closed_port_url()], Options(max_tries=2, ignore_robots=True)
        )
        # The server thread may still be closing its end of the last connection.
        assert wait_for(lambda: open_fds() == before), f"{open_fds()} open, {before} before"
    assert len(result.fetches) == 5


# --- https: the TLS handshake is one more state in the chain ----------------------------


@pytest.fixture(scope="module")
def https_site(test_ca: ServerTLS) -> Iterator[tuple[str, Options]]:
    """Three pages over https, and Options that trust their CA (and ignore robots.txt)."""
    with serve(Site(pages=3, traps=False), tls=test_ca) as base:
        yield base, Options(cafile=test_ca.cafile, ignore_robots=True)


def test_https_handshake_is_a_callback_of_its_own_and_every_socket_is_closed(
    loops: list[WatchedLoop], monkeypatch: pytest.MonkeyPatch, https_site: tuple[str, Options]
) -> None:
    steps: list[str] = []
    on_handshake = Fetcher._on_handshake

    def spying(self: Fetcher, key: Any, mask: int) -> None:
        steps.append(self.url)
        on_handshake(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_handshake", spying)
    base, options = https_site
    result = stage1_callbacks.crawl([base], options)
    assert {stat.url: stat.status for stat in result.fetches} == {
        base: 200,
        base + "p/1": 200,
        base + "p/2": 200,
    }
    # Every fetch went through the handshake callback.  (How many steps each took is
    # the server's to decide: do_handshake releases the GIL, and the local server may
    # answer before the first step is over, so a handshake can finish in one call.)
    assert set(steps) == result.urls, (steps, result.fetches)
    assert_all_closed(loops[0])  # the TLS sockets, and the plain ones they took over


def test_bytes_waiting_in_the_tls_buffer_are_read_without_waiting_for_the_socket(
    monkeypatch: pytest.MonkeyPatch, lingering_tls_server: str, test_ca: ServerTLS
) -> None:
    """recv() of 100 bytes leaves most of a TLS record decrypted in the SSL object's buffer,
    which select() cannot see: _on_readable must read on until nothing is left."""
    monkeypatch.setattr(stage1_crawler, "CHUNK", 100)
    # A fetch that waited for the socket would end only at the timeout, 60 s: one that
    # reads the buffer ends in well under a second, and half a minute on a loaded laptop.
    options = Options(cafile=test_ca.cafile, ignore_robots=True, timeout=60, max_tries=1)
    started = time.monotonic()
    result = stage1_callbacks.crawl([lingering_tls_server], options)
    [stat] = result.fetches
    assert (stat.status, stat.size, stat.error) == (200, 5026, None)
    assert time.monotonic() - started < 30  # well under the 60 s timeout: it did not wait
