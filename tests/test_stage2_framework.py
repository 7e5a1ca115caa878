"""Unit tests for the stage 2 framework: the chapter's claims about coroutines, as tests.

Plain synchronous tests: each one gets a fresh EventLoop (the fixture the stage 2
exercises use, tests/exercises/stage2_loop.py), drives coroutines with run_until_complete()
and closes the loop.  What an exercise judges is tested once, there: the suite runs
tests/exercises/test_s2_*.py too, against the repository's stage 2.
"""

from __future__ import annotations

import ast
import heapq
import selectors
import socket
import ssl
import time
import traceback
from pathlib import Path
from typing import Any, TypeVar

import pytest
from stage2_loop import loop_fixture  # noqa: F401 (the fixture `loop`)

from shared.httpwire import address, request_bytes
from shared.log import Record
from shared.testsite import ServerTLS
from shared.tls import ssl_context, tls_socket
from stage2_generators import events
from stage2_generators.events import get_running_loop
from stage2_generators.futures import CancelledError, Coroutine, Future, InvalidStateError
from stage2_generators.loop import EventLoop, Handle
from stage2_generators.queues import Queue
from stage2_generators.sockets import sock_connect, sock_handshake, sock_recv, sock_sendall
from stage2_generators.tasks import Task, sleep, timeout

STAGE2_DIR = Path(__file__).resolve().parent.parent / "stage2_generators"
T = TypeVar("T")


def within(seconds: float, coro: Coroutine[T]) -> Coroutine[T]:
    """Run `coro` in the calling task, under a timeout of `seconds`."""
    with timeout(seconds):
        return (yield from coro)


def frame_names(exc: BaseException) -> list[str]:
    """Return the function names in the traceback of `exc`, outermost first."""
    return [frame.name for frame in traceback.extract_tb(exc.__traceback__)]


# --- Futures --------------------------------------------------------------------------------


def test_set_result_twice_raises_invalid_state(loop: EventLoop) -> None:
    """A future changes state once: a second set_result or set_exception is an error."""
    fut: Future[int] = Future()
    fut.set_result(1)
    with pytest.raises(InvalidStateError):
        fut.set_result(2)
    with pytest.raises(InvalidStateError):
        fut.set_exception(ValueError("too late"))
    assert fut.result() == 1


def test_result_depends_on_state(loop: EventLoop) -> None:
    """result() raises InvalidStateError, the stored error or CancelledError, by state."""
    pending: Future[int] = Future()
    with pytest.raises(InvalidStateError):
        pending.result()
    failed: Future[int] = Future()
    failed.set_exception(ValueError("bad"))
    with pytest.raises(ValueError, match="bad"):
        failed.result()
    assert isinstance(failed.exception(), ValueError)
    cancelled: Future[int] = Future()
    assert cancelled.cancel() is True
    assert cancelled.cancel() is False
    assert cancelled.cancelled() and cancelled.done()
    with pytest.raises(CancelledError):
        cancelled.result()


def test_done_callbacks_run_through_the_loop(loop: EventLoop) -> None:
    """Done callbacks go through call_soon, also when added to a future that is already done."""
    fut: Future[str] = Future()
    seen: list[str] = []
    fut.add_done_callback(lambda f: seen.append(f.result()))
    fut.set_result("early")
    assert seen == [], "callbacks are scheduled with call_soon, not run inline"
    fut.add_done_callback(lambda f: seen.append("late"))  # already done: scheduled at once
    loop.run_once()
    assert seen == ["early", "late"]


def test_a_done_future_resumes_its_waiter_at_once(loop: EventLoop) -> None:
    """Footnote 12: `yield from` a done future does not pause; a pending one goes to the Task."""
    done: Future[int] = Future()
    done.set_result(42)

    def waiter(fut: Future[int]) -> Coroutine[int]:
        return (yield from fut)

    # Footnote 12: no pause, so the very first send() already finishes the coroutine.
    with pytest.raises(StopIteration) as stop:
        waiter(done).send(None)
    assert stop.value.value == 42
    # A pending future, by contrast, is yielded to the driver.
    pending: Future[int] = Future()
    assert waiter(pending).send(None) is pending


# --- Tasks: stack ripping cured ----------------------------------------------------------------


def raise_after_pause() -> Coroutine[None]:
    """Pause once, then fail: the exception starts inside the coroutine."""
    yield from sleep(0)
    raise ValueError("raised after a pause")


def fail_from_loop() -> Coroutine[None]:
    """Wait for a future that a loop callback fails: the exception arrives from outside."""
    fut: Future[None] = Future()
    get_running_loop().call_soon(fut.set_exception, ValueError("set by a callback"))
    yield from fut


@pytest.mark.parametrize("innermost", [raise_after_pause, fail_from_loop])
def test_traceback_has_every_coroutine_frame(loop: EventLoop, innermost: Any) -> None:
    """Stack ripping cured: the traceback shows both levels of `yield from` below the root."""

    def middle() -> Coroutine[None]:
        yield from innermost()

    def outer() -> Coroutine[None]:
        yield from middle()

    with pytest.raises(ValueError) as info:
        loop.run_until_complete(outer())
    names = frame_names(info.value)
    # Two levels of `yield from` below `outer`, all present and in call order.
    expected = ["outer", "middle", innermost.__name__]
    assert [name for name in names if name in expected] == expected


def test_try_except_around_yield_from_catches_after_a_pause(loop: EventLoop) -> None:
    """try/except around `yield from` works like around a call, even after a pause."""

    def caller() -> Coroutine[str]:
        try:
            yield from raise_after_pause()
        except ValueError as exc:
            return f"caught {exc}"
        return "not caught"

    assert loop.run_until_complete(caller()) == "caught raised after a pause"


def test_a_task_is_named_after_its_coroutine_unless_named(loop: EventLoop) -> None:
    """The name --trace shows: the coroutine's own (work, fetch, request) or the one given."""
    assert Task(sleep(0)).name == "sleep"
    assert Task(sleep(0), name="worker-3").name == "worker-3"
    loop.run_until_complete(sleep(0.01))


def test_yielding_a_non_future_fails_the_task(loop: EventLoop) -> None:
    """A bare `yield` of a non-Future is a bug: the task fails with a RuntimeError."""

    def buggy() -> Coroutine[None]:
        yield 42  # type: ignore[misc]  # `yield` where `yield from` was meant

    task = Task(buggy())
    with pytest.raises(RuntimeError, match="only yield Futures") as info:
        loop.run_until_complete(task)
    assert "buggy" in frame_names(info.value)  # the error points at the bad yield


# --- Cancellation ------------------------------------------------------------------------------


def test_a_cancelled_task_reports_cancelled(loop: EventLoop) -> None:
    """A task whose coroutine lets CancelledError out is cancelled, and result() raises it."""
    task = Task(sleep(10))

    def main() -> Coroutine[None]:
        yield from sleep(0)
        task.cancel()

    loop.run_until_complete(main())
    with pytest.raises(CancelledError):
        loop.run_until_complete(task)
    assert task.cancelled()
    # sleep() cancelled its timer on the way out: nothing is left to fire in ten seconds.
    assert all(handle._cancelled for _, _, handle in loop._scheduled)


# --- The loop ----------------------------------------------------------------------------------


def test_timers_fire_in_order(loop: EventLoop) -> None:
    """Timers fire in time order, ties in the order they were set; a cancelled timer never fires."""
    fired: list[str] = []
    finished: Future[None] = Future()
    loop.call_later(0.03, fired.append, "c")
    loop.call_later(0.01, fired.append, "a")
    loop.call_later(0.02, fired.append, "b1")
    loop.call_later(0.02, fired.append, "b2")  # same time: runs after b1, in order of setting
    loop.call_later(0.015, fired.append, "cancelled").cancel()
    loop.call_later(0.04, finished.set_result, None)
    start = time.monotonic()
    loop.run_until_complete(finished)
    assert fired == ["a", "b1", "b2", "c"]
    assert time.monotonic() - start >= 0.04


def test_an_exception_in_a_callback_is_logged_and_the_loop_goes_on(
    loop: EventLoop, logged: list[Record]
) -> None:
    """An exception escaping a plain callback is logged and the next callback still runs."""

    def broken() -> None:
        raise ZeroDivisionError("oops")

    fut: Future[str] = Future()
    loop.call_soon(broken)
    loop.call_soon(fut.set_result, "still running")
    assert loop.run_until_complete(fut) == "still running"
    text = "\n".join(str(r) for r in logged if r.name == "stage2_generators.loop")
    assert "Exception in callback" in text
    assert "ZeroDivisionError: oops" in text


def test_one_socket_can_wait_to_read_and_to_write(loop: EventLoop) -> None:
    """Reader and writer share one selector key: register, modify, unregister."""
    a, b = socket.socketpair()
    with a, b:
        loop.add_reader(a, lambda: None)
        loop.add_writer(a, lambda: None)
        assert loop._selector.get_key(a).events == selectors.EVENT_READ | selectors.EVENT_WRITE
        assert loop.remove_reader(a) is True
        assert loop._selector.get_key(a).events == selectors.EVENT_WRITE
        assert loop.remove_writer(a) is True
        assert len(loop._selector.get_map()) == 0
        assert loop.remove_writer(a) is False


def test_a_future_nobody_can_resolve_is_a_deadlock(loop: EventLoop) -> None:
    """With nothing that could ever wake it, the loop raises instead of sleeping forever."""
    with pytest.raises(RuntimeError, match="deadlock"):
        loop.run_until_complete(Future())


def test_ten_thousand_tasks_in_one_loop(loop: EventLoop) -> None:
    """Coroutines are cheap: ten thousand tasks finish quickly in one thread."""
    done: Future[int] = Future()
    done.set_result(1)

    def small(i: int) -> Coroutine[int]:
        if i % 2:
            yield from sleep(0)
        else:
            yield from done
        return i

    def main() -> Coroutine[int]:
        tasks = [Task(small(i)) for i in range(10_000)]
        total = 0
        for task in tasks:
            total += yield from task
        return total

    start = time.monotonic()
    assert loop.run_until_complete(main()) == sum(range(10_000))
    assert time.monotonic() - start < 10


# --- Queue -------------------------------------------------------------------------------------


def test_queue_get_waits_for_put(loop: EventLoop) -> None:
    """get() pauses while the queue is empty and returns the item put later."""
    q: Queue[str] = Queue()

    def producer() -> Coroutine[None]:
        yield from sleep(0.01)
        q.put_nowait("item")

    def consumer() -> Coroutine[str]:
        Task(producer())
        return (yield from q.get())

    assert loop.run_until_complete(consumer()) == "item"


def test_join_rearms_when_new_work_arrives(loop: EventLoop) -> None:
    """Footnote 9: after the count was zero, new work makes join() wait again."""
    q: Queue[int] = Queue()
    loop.run_until_complete(q.join())  # nothing put yet: returns at once
    q.put_nowait(1)
    joiner = Task(q.join())

    def main() -> Coroutine[bool]:
        yield from sleep(0)
        return joiner.done()

    assert loop.run_until_complete(main()) is False
    assert loop.run_until_complete(q.get()) == 1
    q.task_done()
    loop.run_until_complete(joiner)


# --- Sockets -----------------------------------------------------------------------------------


def test_timeout_cancels_a_stuck_recv(loop: EventLoop) -> None:
    """A timeout cancels the read at its pause, and its finally block unregisters the socket."""
    a, b = socket.socketpair()
    a.setblocking(False)
    with a, b:
        with pytest.raises(TimeoutError):
            loop.run_until_complete(within(0.05, sock_recv(a, 100)))
        # The cancelled read left through its finally block and unregistered the socket.
        assert len(loop._selector.get_map()) == 0


def test_timeout_lets_the_result_through_in_time(loop: EventLoop) -> None:
    """A block that beats its timeout ends as it would without one."""
    a, b = socket.socketpair()
    a.setblocking(False)
    with a, b:
        b.sendall(b"hello")
        assert loop.run_until_complete(within(5, sock_recv(a, 100))) == b"hello"
        assert len(loop._selector.get_map()) == 0


def test_sock_connect_to_a_closed_port_is_refused(loop: EventLoop) -> None:
    """A refused connection surfaces as ConnectionRefusedError, read from SO_ERROR."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nobody listens here once probe is closed
    with socket.socket() as sock:
        sock.setblocking(False)
        with pytest.raises(ConnectionRefusedError):
            loop.run_until_complete(sock_connect(sock, ("127.0.0.1", port)))
        assert len(loop._selector.get_map()) == 0


def test_connect_sendall_recv_round_trip(loop: EventLoop) -> None:
    """Echo 2 MiB over 127.0.0.1: connect, partial sends and reads all complete."""
    payload = bytes(range(256)) * 8192  # 2 MiB: more than the buffers hold, so sends are partial

    def echo(conn: socket.socket) -> Coroutine[None]:
        while chunk := (yield from sock_recv(conn, 65536)):
            yield from sock_sendall(conn, chunk)

    def client(listener: socket.socket, sock: socket.socket) -> Coroutine[bytes]:
        yield from sock_connect(sock, listener.getsockname())
        conn, _ = listener.accept()  # the handshake is complete, so accept() does not block
        conn.setblocking(False)
        with conn:
            server = Task(echo(conn))
            sender = Task(sock_sendall(sock, payload))  # send while we receive
            received = bytearray()
            while len(received) < len(payload):
                received += yield from sock_recv(sock, 65536)
            yield from sender
            sock.shutdown(socket.SHUT_WR)  # the echo loop sees b"" and ends
            yield from server
        return bytes(received)

    with socket.create_server(("127.0.0.1", 0)) as listener, socket.socket() as sock:
        sock.setblocking(False)
        assert loop.run_until_complete(client(listener, sock)) == payload
        assert len(loop._selector.get_map()) == 0


# --- TLS on the same sockets ------------------------------------------------------------------


def https_get(url: str, context: ssl.SSLContext) -> Coroutine[bytes]:
    """GET url over TLS with the framework's coroutines, 100 bytes per recv, until the page ends."""
    with socket.socket() as sock:
        sock.setblocking(False)
        yield from sock_connect(sock, address(url))
        with tls_socket(sock, url, context) as tls:
            assert isinstance(tls, ssl.SSLSocket)
            yield from sock_handshake(tls)
            yield from sock_sendall(tls, request_bytes(url))
            received = b""
            while not received.endswith(b"</html>"):
                # 100 bytes of a TLS record come out, the rest stays decrypted in the SSL
                # object's buffer, where select() cannot see it: sock_recv must look there.
                received += yield from sock_recv(tls, 100)
            return received


def test_sock_handshake_then_the_wrapped_socket_carries_http(
    loop: EventLoop, lingering_tls_server: str, test_ca: ServerTLS
) -> None:
    context = ssl_context(cafile=test_ca.cafile)
    response = loop.run_until_complete(within(5, https_get(lingering_tls_server, context)))
    assert response.startswith(b"HTTP/1.1 200 OK\r\n") and len(response) > 5000
    assert len(loop._selector.get_map()) == 0


def test_sock_handshake_raises_when_the_certificate_does_not_verify(
    loop: EventLoop, lingering_tls_server: str
) -> None:
    """The system's CAs alone do not know the test CA: the handshake fails, loudly."""
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        loop.run_until_complete(within(5, https_get(lingering_tls_server, ssl_context())))
    assert len(loop._selector.get_map()) == 0


# --- No asyncio in stage 2 ---------------------------------------------------------------------


def test_no_module_in_stage2_imports_asyncio() -> None:
    """Stage 2 builds its own framework: no module in it imports asyncio."""
    sources = sorted(STAGE2_DIR.glob("*.py"))
    assert sources, f"no Python files in {STAGE2_DIR}"
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            for module in modules:
                assert module.split(".")[0] != "asyncio", f"{path.name} imports {module}"


def stuck(cleaned: list[str]) -> Coroutine[None]:
    """Wait for ten seconds, noting that its finally block ran."""
    try:
        yield from sleep(10)
    finally:
        cleaned.append("finally")


def test_timeout_passes_on_a_cancel_that_comes_in_the_turn_its_timer_fires(
    loop: EventLoop,
) -> None:
    """The task cancelled in the very turn its timeout fires: still a cancellation.

    Turned into TimeoutError, the cancellation would be lost: the crawler retries a
    timed-out request, so a worker cancelled by Ctrl-C would go on crawling.
    """
    cleaned: list[str] = []
    task = Task(within(0.05, stuck(cleaned)))
    loop.call_later(0.05, task.cancel)  # set first, so due first, in the same turn as the timer
    with pytest.raises(CancelledError):
        loop.run_until_complete(task)
    assert task.cancelled()
    assert cleaned == ["finally"]  # the request's clean-up ran before the task ended


def test_timeout_passes_on_a_cancel_that_comes_after_its_timer_in_the_same_turn(
    loop: EventLoop,
) -> None:
    """The other order: the timer's cancel first, one from outside next, before the step.

    Both requests make one CancelledError; the timeout takes back its own and finds the
    other one left, so the error stays a CancelledError.
    """
    cleaned: list[str] = []

    def caller() -> Coroutine[None]:
        with timeout(0.05):
            # The timeout's timer is the one live timer now: put a cancel right behind it,
            # due at the same moment, so that the two run in one turn, the timer first.
            ((when, _, _),) = [t for t in loop._scheduled if not t[2]._cancelled]
            outside = Handle(task.cancel, (), when)
            heapq.heappush(loop._scheduled, (when, next(loop._sequence), outside))
            yield from stuck(cleaned)

    task = Task(caller())
    with pytest.raises(CancelledError):
        loop.run_until_complete(task)
    assert task.cancelled()
    assert cleaned == ["finally"]


def test_timeouts_one_after_another_in_one_task_each_time_out(loop: EventLoop) -> None:
    """A worker's tries time out one after another: each is a TimeoutError, not a cancel."""

    def tries() -> Coroutine[list[str]]:
        outcomes = []
        for _ in range(3):
            try:
                with timeout(0.01):
                    yield from sleep(10)
            except TimeoutError:
                outcomes.append("TimeoutError")
        with timeout(1):
            yield from sleep(0)
        return outcomes

    assert loop.run_until_complete(tries()) == ["TimeoutError"] * 3


def test_a_timeout_that_fired_inside_another_leaves_the_outer_one_a_timeout(
    loop: EventLoop,
) -> None:
    """The inner timeout takes back its request: the outer one, firing later, still times out."""

    def nested() -> Coroutine[str]:
        with timeout(0.1):
            try:
                with timeout(0.01):
                    yield from sleep(10)
            except TimeoutError:
                pass
            yield from sleep(10)
        return "not reached"

    with pytest.raises(TimeoutError):
        loop.run_until_complete(nested())


def test_timeout_outside_a_task_is_an_error_that_says_so(loop: EventLoop) -> None:
    """timeout() needs the task to cancel: plain code has none, and is told so in a sentence."""
    with pytest.raises(RuntimeError, match="only in a coroutine that a Task runs"), timeout(1):
        pass


def test_without_an_event_loop_a_task_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No loop running: asking for one raises, as asyncio's does; none is made on the quiet."""
    monkeypatch.setattr(events, "_running_loop", None)  # no loop, whatever ran before
    with pytest.raises(RuntimeError, match="no running event loop"):
        get_running_loop()
    with pytest.raises(RuntimeError, match="no running event loop"):
        Task(sleep(0))
    assert events._running_loop is None


def test_uncancel_takes_back_one_request_as_asyncio_does(loop: EventLoop) -> None:
    """cancelling() counts the requests not taken back; uncancel() takes one back."""

    def waiter() -> Coroutine[None]:
        yield from Future()

    task = Task(waiter())
    assert task.cancelling() == 0
    task.cancel()
    task.cancel()
    assert task.cancelling() == 2
    assert task.uncancel() == 1 and task.cancelling() == 1
    with pytest.raises(CancelledError):
        loop.run_until_complete(task)  # one request is left: it is still a cancel


def test_a_timer_cancelled_in_the_turn_it_fell_due_does_not_run(loop: EventLoop) -> None:
    """Cancelled after it was due, before its callback's turn came: it never runs.

    A response that beats its timeout in the very turn the timer falls due cancels the
    timer then; run anyway, the timer would cancel a task that has moved on.
    """
    ran: list[str] = []
    handle = loop.call_later(0, ran.append, "timer")
    loop.call_soon(handle.cancel)  # ready before the timer is due, so it runs first
    loop.run_once()
    assert ran == []
