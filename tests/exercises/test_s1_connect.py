"""Exercise s1-connect: stage 1's non-blocking connect (start, _on_resolved, _on_connected).

Task 1 is start() and _on_resolved(): the try's timer, the name lookup asked of the
resolver with _on_resolved as its continuation; then, unless the answer is late, a
socket, made non-blocking, its connect begun and left to finish while the loop does
other things, and _on_connected registered as the continuation.  Task 2 is
_on_connected(): "writable" says the connect ended, SO_ERROR says how.

The Task 1 tests drive one Fetcher on a real EventLoop (the Harness below) and never
need _on_connected, so they pass as soon as start() and _on_resolved() are right.
Servers are sockets on 127.0.0.1 that the tests control, and the test site of
shared/testsite.py.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Callable, Iterator
from selectors import EVENT_WRITE
from typing import Any

import pytest
import stage1_harness
from reasons import reason
from stage1_harness import CRAWL_LIMIT_S, WatchedLoop, watch_crawls

import stage1_callbacks
from shared.crawling import Options
from shared.httpwire import ResponseParser, address, request_bytes
from shared.report import FetchStatistic
from shared.resolver import Answer, Resolver
from shared.testsite import ServerTLS, Site, serve
from shared.testsite.oracle import assert_matches_oracle
from shared.testsite.raw import closed_port_url, silent_server
from stage1_callbacks.crawler import Fetcher
from stage1_callbacks.loop import Callback

# --- servers on 127.0.0.1 ---------------------------------------------------------------


@contextlib.contextmanager
def full_listener() -> Iterator[str]:
    """A listener whose accept queue is full, so that a new connect stays unfinished.

    Nothing ever accepts.  Connections are opened until one stays pending; from then on
    the kernel drops every new connection request, and a blocking connect() would wait
    for a long time.  Yields the base URL.
    """
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener:
        address = listener.getsockname()
        fillers: list[socket.socket] = []
        try:
            for _ in range(64):
                sock = socket.socket()
                fillers.append(sock)
                sock.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    sock.connect(address)
                _, writable, _ = select.select([], [sock], [], 0.2)
                if not writable:
                    break  # this one is left pending: the queue is full
            else:
                pytest.fail(reason("s1-connect.could-not-fill-the-listener"))
            yield f"http://127.0.0.1:{address[1]}/"
        finally:
            for sock in fillers:
                sock.close()


@pytest.fixture
def blocking_calls_time_out() -> Iterator[None]:
    """A socket left in blocking mode gives up after a second instead of hanging the test."""
    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(1.0)
    yield
    socket.setdefaulttimeout(before)


# --- no crawl hangs ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def loops(monkeypatch: pytest.MonkeyPatch) -> list[WatchedLoop]:
    """Give every stage 1 crawl of this module a deadline, rather than let it hang."""
    return watch_crawls(monkeypatch, limit=CRAWL_LIMIT_S)


# --- one Fetcher on a real loop ----------------------------------------------------------


class Harness(stage1_harness.Harness):
    """A stage 1 Crawler set up as crawl() sets it up, for a test to drive its Fetchers.

    An exception that escapes a callback is kept in ``errors`` (and its Fetcher closed),
    and ``finished`` starts nothing more: the test decides what runs.
    """

    def __init__(self, url: str, options: Options) -> None:
        self.errors: list[Exception] = []
        super().__init__(url, options)

    def make_loop(self) -> WatchedLoop:
        """A loop that remembers the sockets, and keeps what escapes a callback."""
        return WatchedLoop(self.on_error)

    def on_error(self, exc: Exception, callback: Callback) -> None:
        """Keep an exception that escaped a callback, and end its Fetcher."""
        self.errors.append(exc)
        fetcher = getattr(callback, "__self__", None)
        if isinstance(fetcher, Fetcher):
            fetcher.close()
            self.fetchers.pop(fetcher.url, None)

    def add(self, url: str) -> Fetcher:
        """Make a Fetcher for url and count it in flight, without starting it."""
        fetcher = self.fetchers[url] = Fetcher(self, url, self.max_redirect)
        return fetcher

    def finished(self, fetcher: Fetcher, items: list[tuple[str, int]]) -> None:
        """Take the Fetcher out of flight; start nothing more."""
        self.fetchers.pop(fetcher.url, None)

    def run(self, limit: float = 3.0) -> bool:
        """Turn the loop until no Fetcher is in flight; False if ``limit`` seconds ran out.

        Whatever is still in flight then is closed, and so is the loop.
        """
        expired: list[bool] = []
        guard = self.loop.call_later(limit, expired.append, True)
        try:
            self.loop.run_until(lambda: not self.fetchers or bool(expired))
        finally:
            guard.cancel()
            for fetcher in list(self.fetchers.values()):
                fetcher.close()
            self.loop.close()
        return not expired


def no_errors(crawler: Harness) -> str:
    """The message for an exception that escaped a callback."""
    return reason("s1-connect.escaped", errors=repr(crawler.errors))


def crawl_answered(url: str, answer: Answer, max_tries: int) -> tuple[Harness, Fetcher]:
    """Fetch ``url`` with a resolver that gives ``answer`` at once, each try, and run the
    crawl to its end; return the crawler and the fetcher.

    Fails if a socket the tries made is still open when the crawl has ended: however a
    try ends, close() closes its socket, which it finds in self.sock."""

    class Answering(Resolver):
        def resolve(self, url: str, then: Callable[[Answer], object]) -> None:
            then(answer)

    made: list[socket.socket] = []

    class Made(socket.socket):
        """A socket that the test remembers (and so keeps from the garbage collector)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    crawler = Harness(url, Options(ignore_robots=True, timeout=1, max_tries=max_tries))
    crawler.resolver = Answering()
    crawler.fetch(url, crawler.max_redirect)
    fetcher = crawler.fetchers[url]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "socket", Made)
        crawler.run()
    left_open = sum(sock.fileno() != -1 for sock in made)
    for sock in made:
        sock.close()
    assert not left_open, reason("s1-connect.socket-left-open", count=left_open, made=len(made))
    return crawler, fetcher


def the_record(crawler: Harness, fetcher: Fetcher, limit: float = 3.0) -> FetchStatistic:
    """The fetch's one record; fail saying why if the fetch made none within ``limit`` s."""
    fetches = crawler.result().fetches
    if not fetches and fetcher.tries == 0:
        pytest.fail(reason("s1-connect.tries-never-counted", limit=limit))
    if not fetches:
        pytest.fail(reason("s1-connect.no-record", limit=limit, tries=fetcher.tries))
    [stat] = fetches
    return stat


def spy(
    monkeypatch: pytest.MonkeyPatch, name: str, calls: list[str]
) -> Callable[[Fetcher, Any, int], None]:
    """Replace Fetcher.<name> by a wrapper that notes the URL of each call, then runs it."""
    original = getattr(Fetcher, name)

    def wrapper(self: Fetcher, key: Any, mask: int) -> None:
        calls.append(self.url)
        original(self, key, mask)

    monkeypatch.setattr(Fetcher, name, wrapper)
    return wrapper


def spy_at_once(monkeypatch: pytest.MonkeyPatch, name: str) -> dict[str, bool]:
    """Note, for each URL, whether Fetcher.<name> first ran inside _on_connected (True) or
    on a later turn of the loop (False)."""
    inside: set[str] = set()
    first: dict[str, bool] = {}
    connected, original = Fetcher._on_connected, getattr(Fetcher, name)

    def on_connected(self: Fetcher, key: Any, mask: int) -> None:
        inside.add(self.url)
        try:
            connected(self, key, mask)
        finally:
            inside.discard(self.url)

    def wrapper(self: Fetcher, key: Any, mask: int) -> None:
        first.setdefault(self.url, self.url in inside)
        original(self, key, mask)

    monkeypatch.setattr(Fetcher, "_on_connected", on_connected)
    monkeypatch.setattr(Fetcher, name, wrapper)
    return first


# --- Task 1: start() and _on_resolved() ---------------------------------------------------


@pytest.mark.task(taskno=1)
def test_start_returns_at_once_while_the_connection_is_still_being_made(
    blocking_calls_time_out: None,
) -> None:
    """The server cannot take the connection yet: start() begins it and returns."""
    with full_listener() as base:
        crawler = Harness(base, Options(ignore_robots=True, timeout=0.3, max_tries=1))
        fetcher = crawler.add(base)
        began = time.monotonic()
        fetcher.start()
        took = time.monotonic() - began
        sock = fetcher.sock
        assert took < 0.25, reason("s1-connect.start-took-s-it-waited", took=f"{took:.2f}")
        # No socket, and no failed try either: _on_resolved dropped the answer as late.
        assert sock is not None or crawler.done, reason("s1-connect.answer-taken-for-late")
        assert sock is not None, reason("s1-connect.no-socket")
        assert not sock.getblocking(), reason("s1-connect.the-socket-must-be-non")
        crawler.run()
    assert not crawler.errors, reason("s1-connect.escaped", errors=repr(crawler.errors))
    stat = the_record(crawler, fetcher)
    # The connection was never made: only the try's timer could end it.
    assert stat.error is not None and stat.error.startswith("TimeoutError"), reason(
        "s1-connect.recorded-as", stat=stat
    )
    assert stat.tries == 1, reason("s1-connect.the-failed-connect-was-recorded", stat=stat)


@pytest.mark.task(taskno=1)
def test_start_leaves_on_connected_waiting_for_the_socket_to_be_writable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The continuation: the loop calls _on_connected once the socket is writable."""
    calls: list[tuple[str, int, int]] = []

    def on_connected(self: Fetcher, key: Any, mask: int) -> None:
        assert self.sock is not None, reason("s1-connect.start-kept-no-socket-in")
        calls.append((self.url, mask, self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)))
        self.close()
        self.crawler.finished(self, [])

    monkeypatch.setattr(Fetcher, "_on_connected", on_connected)
    with silent_server() as base:
        crawler = Harness(base, Options(ignore_robots=True, timeout=1, max_tries=1))
        crawler.fetch(base, crawler.max_redirect)  # start() runs as a loop callback, as in a crawl
        crawler.run()
    assert not crawler.errors, reason("s1-connect.escaped", errors=repr(crawler.errors))
    assert calls, reason("s1-connect.the-loop-never-called-on")
    assert calls == [(base, EVENT_WRITE, 0)], reason(
        "s1-connect.the-loop-was-asked-for", calls=calls
    )


@pytest.mark.task(taskno=1)
def test_each_try_has_its_own_socket_and_its_own_timer(blocking_calls_time_out: None) -> None:
    """A try that never connects ends by its timer; the next try starts from nothing."""
    with full_listener() as base:
        crawler = Harness(base, Options(ignore_robots=True, timeout=0.2, max_tries=3))
        crawler.fetch(base, crawler.max_redirect)
        fetcher = crawler.fetchers[base]
        ended = crawler.run()
    assert not crawler.errors, reason("s1-connect.escaped", errors=repr(crawler.errors))
    assert fetcher.tries > 0, reason("s1-connect.tries-never-counted", limit=3)
    assert ended, reason("s1-connect.no-try-ended-within-3")
    stat = the_record(crawler, fetcher)
    assert stat.error is not None and stat.error.startswith("TimeoutError"), reason(
        "s1-connect.recorded-as", stat=stat
    )
    assert stat.tries == 3, reason("s1-connect.start-counts-each-try-in")
    sockets = crawler.loop.sockets
    assert len(sockets) == 3, reason(
        "s1-connect.sockets-registered-for-3-tries", sockets_count=len(sockets)
    )
    assert all(sock.fileno() == -1 for sock in sockets), reason("s1-connect.every-try-s-socket-is")


@pytest.mark.task(taskno=1)
def test_a_name_that_does_not_resolve_is_a_failed_try() -> None:
    """An OSError before the connect has begun ends the try at once, and is tried again."""

    unknown = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    crawler, fetcher = crawl_answered("http://unknown.test/", unknown, max_tries=3)
    assert not crawler.errors, reason(
        "s1-connect.an-oserror-in-start-is", value0=no_errors(crawler)
    )
    stat = the_record(crawler, fetcher)
    assert stat.error is not None and stat.error.startswith("gaierror"), reason(
        "s1-connect.resolve-error-lost", error=stat.error
    )
    assert stat.tries == 3, reason("s1-connect.each-of-the-3-tries", stat=stat)


@pytest.mark.task(taskno=1)
def test_a_connect_refused_at_once_is_a_failed_try_that_never_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only BlockingIOError means "begun": any other OSError of connect() ends the try."""

    waited: list[str] = []
    spy(monkeypatch, "_on_connected", waited)
    missing = (socket.AF_UNIX, "/nonexistent/crawler500/socket")  # refused at once
    crawler, fetcher = crawl_answered("http://refused.test/", missing, max_tries=2)
    assert not crawler.errors, reason("s1-connect.escaped", errors=repr(crawler.errors))
    stat = the_record(crawler, fetcher)
    assert not waited and stat.error and stat.error.startswith("FileNotFoundError"), reason(
        "s1-connect.connect-error-lost", error=stat.error
    )
    assert stat.tries == 2, reason("s1-connect.each-of-the-3-tries", stat=stat)


@pytest.mark.task(taskno=1)
def test_each_try_starts_from_nothing_and_keeps_its_timer() -> None:
    """A new parser, the whole request, one try more, and the timer's handle for close()."""
    with silent_server() as base:
        crawler = Harness(base, Options(ignore_robots=True, timeout=5, max_tries=3))
        fetcher = crawler.add(base)
        old = fetcher.parser = ResponseParser()
        fetcher.tries, fetcher.unsent = 1, b"the end of the last try's request"
        try:
            before = crawler.loop.time()
            fetcher.start()
            after = crawler.loop.time()
            timers = [
                handle
                for _, _, handle in crawler.loop._scheduled
                if handle.callback == fetcher._on_timeout and not handle.cancelled()
            ]
            fresh = fetcher.parser is not old and fetcher.unsent == request_bytes(base)
            assert fetcher.tries == 2, reason("s1-connect.start-counts-each-try-in")
            assert fresh, reason("s1-connect.not-a-fresh-start")
            assert timers and fetcher.timer is timers[0], reason("s1-connect.timer-not-kept")
            when = timers[0].when
            assert before + 5 <= when <= after + 5, reason(
                "s1-connect.timer-not-the-timeout", due=f"{when - before:.2f}", timeout=5
            )
            fetcher.close()
            assert timers[0].cancelled(), reason("s1-connect.timer-not-kept")
        finally:
            fetcher.close()
            crawler.loop.close()


class Late(Resolver):
    """DNS that has not answered yet: each continuation waits here until :meth:`answer`."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[Callable[[Answer], object]] = []
        self.answered = False

    def resolve(self, url: str, then: Callable[[Answer], object]) -> None:
        """Keep the continuation: the lookup is under way."""
        self.asked.append(then)

    def answer(self, answer: Answer) -> None:
        """DNS answers at last, from the loop, as Resolver.on_readable hands an answer over."""
        self.answered = True
        for then in self.asked:
            then(answer)


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize(
    ("ended_by", "answer"),
    [
        ("its timer", "an address"),
        ("its timer", "an error"),
        ("Ctrl-C", "an address"),
        ("Ctrl-C", "an error"),
        ("its timer, the next try waiting for --delay", "an address"),
    ],
)
def test_a_late_answer_is_dropped(ended_by: str, answer: str) -> None:
    """DNS answers after the try ended: _on_resolved makes no socket and records nothing."""
    retry = "--delay" in ended_by  # then self.timer is the next try's start, not None
    options = Options(
        ignore_robots=True, timeout=0.2, max_tries=2 if retry else 1, delay=1.0 if retry else 0
    )
    with silent_server() as base, Late() as dns:
        crawler = Harness(base, options)
        crawler.resolver = dns
        crawler.fetch(base, crawler.max_redirect)
        fetcher = crawler.fetchers[base]
        if ended_by == "Ctrl-C":
            crawler.loop.call_later(0.1, crawler.cancel)
        late: Answer = (socket.AF_INET, address(base))
        if answer == "an error":
            late = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        records: list[int] = []  # the crawl's records before DNS answers, and after
        errors: list[int] = []  # the exceptions that escaped a callback before it answers

        def dns_answers() -> None:
            errors.append(len(crawler.errors))
            records.append(len(crawler.done))
            dns.answer(late)
            records.append(len(crawler.done))

        # The try has ended by 0.2 s (its timeout) or 0.1 s (Ctrl-C); the next one, with
        # --delay 1, starts at 1 s.  DNS answers in between.
        crawler.loop.call_later(0.5, dns_answers)
        try:
            crawler.loop.run_until(lambda: dns.answered)
            made = fetcher.sock is not None or bool(crawler.loop.sockets)
        finally:
            fetcher.close()
            crawler.loop.close()
    assert not crawler.errors[: errors[0]], reason(
        "s1-connect.escaped", errors=repr(crawler.errors)
    )
    if crawler.errors:
        pytest.fail(reason("s1-connect.late-answer-raised", error=repr(crawler.errors[0])))
    assert not made, reason("s1-connect.late-answer-made-a-socket")
    before, after = records
    assert before == after, reason("s1-connect.late-answer-recorded", before=before, after=after)


# --- Task 2: _on_connected() --------------------------------------------------------------


@pytest.mark.task(taskno=2)
def test_a_refused_connect_is_a_failed_try_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writable means the connect ended, not that it succeeded: SO_ERROR tells which."""
    sent: list[str] = []
    spy(monkeypatch, "_on_writable", sent)
    spy(monkeypatch, "_on_handshake", sent)
    url = closed_port_url()
    result = stage1_callbacks.crawl([url], Options(max_tries=2, ignore_robots=True))
    [stat] = result.fetches
    assert not sent, reason("s1-connect.refused-sent")
    assert stat.status is None and stat.tries == 2, reason("s1-connect.recorded-as", stat=stat)
    assert stat.error is not None and "ConnectionRefusedError" in stat.error, reason(
        "s1-connect.errno-unnamed", error=stat.error
    )


@pytest.mark.task(taskno=2)
def test_a_connect_that_succeeds_goes_on_to_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole crawl over http: every record as the test site's oracle predicts it."""
    connected: list[str] = []
    spy(monkeypatch, "_on_connected", connected)
    at_once = spy_at_once(monkeypatch, "_on_writable")
    site = Site(pages=8, traps=False)
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(ignore_robots=True))
        assert_matches_oracle(result, site.expected(base, ignore_robots=True))
    assert sorted(connected) == sorted(result.urls), reason(
        "s1-connect.every-fetch-passed-through-on"
    )
    later = sorted(url for url, now in at_once.items() if not now)
    assert not later, reason("s1-connect.a-turn-for-nothing", step="_on_writable", urls=later)


@pytest.mark.task(taskno=2)
def test_an_https_connect_goes_on_to_the_tls_handshake(
    monkeypatch: pytest.MonkeyPatch, test_ca: ServerTLS
) -> None:
    """Over https, the connected socket is wrapped in TLS and the handshake comes next; the
    selector then watches the TLS socket, the one the try uses, not the plain one it wraps."""
    at_once = spy_at_once(monkeypatch, "_on_handshake")
    handshake, stale = Fetcher._on_handshake, []

    def watched(self: Fetcher, key: Any, mask: int) -> None:
        handshake(self, key, mask)
        sock = self.sock
        held = self.loop.selector.get_map().get(sock.fileno()) if sock is not None else None
        if held is not None and held.fileobj is not sock:
            stale.append(self.url)

    monkeypatch.setattr(Fetcher, "_on_handshake", watched)
    site = Site(pages=4, traps=False)
    with serve(site, tls=test_ca) as base:
        options = Options(cafile=test_ca.cafile, ignore_robots=True)
        result = stage1_callbacks.crawl([base], options)
        assert set(at_once) == result.urls, reason("s1-connect.an-https-fetch-did-not")
        assert_matches_oracle(result, site.expected(base, ignore_robots=True))
    later = sorted(url for url, now in at_once.items() if not now)
    assert not later, reason("s1-connect.a-turn-for-nothing", step="_on_handshake", urls=later)
    assert not stale, reason("s1-connect.plain-socket-still-registered", urls=sorted(set(stale)))
