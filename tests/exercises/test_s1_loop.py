"""Exercise s1-loop: one turn of stage 1's event loop, `EventLoop.run_once`.

The tests drive the loop with `socket.socketpair()` (a byte sent on one end makes the
other end readable; a fresh end is writable at once) and with `call_soon` and
`call_later`.  A test that a wrong answer could leave waiting forever has a helper
thread that wakes the loop after a few seconds, so it fails with a message that says
what went wrong instead of running into the time limit.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from reasons import reason

from stage1_callbacks.loop import Callback, EventLoop

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
SAFETY_WAKE_S = 2.0  # when a stuck select() is woken, long after any right answer returned

Pair = tuple[socket.socket, socket.socket]


@pytest.fixture
def caught() -> list[tuple[Exception, Callback]]:
    """What the loop's exception handler received."""
    return []


@pytest.fixture
def loop(caught: list[tuple[Exception, Callback]]) -> Iterator[EventLoop]:
    """A fresh loop whose exception handler records what it is given."""
    loop = EventLoop(lambda exc, callback: caught.append((exc, callback)))
    yield loop
    loop.close()


@pytest.fixture
def pair() -> Iterator[Callable[[], Pair]]:
    """Make connected pairs of non-blocking sockets; all are closed after the test."""
    made: list[socket.socket] = []

    def make() -> Pair:
        left, right = socket.socketpair()
        for sock in (left, right):
            sock.setblocking(False)
            made.append(sock)
        return left, right

    yield make
    for sock in made:
        sock.close()


@pytest.fixture
def send_later() -> Iterator[Callable[[socket.socket, float], None]]:
    """Send a byte on a socket after a delay, from another thread; cancelled after the test."""
    timers: list[threading.Timer] = []

    def schedule(sock: socket.socket, delay: float) -> None:
        timer = threading.Timer(delay, sock.send, args=(b"!",))
        timer.daemon = True
        timers.append(timer)
        timer.start()

    yield schedule
    for timer in timers:
        timer.cancel()
        timer.join()


@pytest.fixture
def nudge(loop: EventLoop, pair: Callable[[], Pair]) -> None:
    """Keep a writable socket registered, so that select() always returns at once.

    Task 2's tests use it: they judge the timers alone, whatever wait task 3 computes.
    """
    left, _ = pair()
    loop.register(left, WRITE, lambda key, mask: None)


@pytest.fixture
def idle(
    loop: EventLoop,
    pair: Callable[[], Pair],
    send_later: Callable[[socket.socket, float], None],
) -> None:
    """Register a socket that nothing makes ready but the safety wake, long after a right
    answer: select() has a socket to wait on, and a wait that goes wrong still ends."""
    idle, idle_peer = pair()
    loop.register(idle, READ, lambda key, mask: None)
    send_later(idle_peer, SAFETY_WAKE_S)


def timed_run_once(loop: EventLoop) -> float:
    """Run one turn of the loop; return how many seconds it took."""
    started = time.monotonic()
    loop.run_once()
    return time.monotonic() - started


def recorder() -> tuple[list[Any], Callable[..., None]]:
    """A list, and a callback that appends its arguments to it (one, or a tuple of several)."""
    seen: list[Any] = []

    def record(*args: Any) -> None:
        seen.append(args[0] if len(args) == 1 else args)

    return seen, record


def run_once_keeping_errors_in(loop: EventLoop) -> None:
    """One turn, which must not let a callback's ValueError out: fail saying so if it does."""
    try:
        loop.run_once()
    except ValueError as exc:
        pytest.fail(reason("s1-loop.a-callback-s-escaped-run", exc=repr(exc)))


# --- task 1: the callbacks of ready sockets ---------------------------------------------


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize(
    ("mask", "why"),
    [
        (READ, "s1-loop.readable-runs-once"),
        (WRITE, "s1-loop.writable-runs"),
    ],
    ids=["readable", "writable"],
)
def test_a_ready_socket_runs_its_callback_with_its_key_and_mask(
    loop: EventLoop, pair: Callable[[], Pair], mask: int, why: str
) -> None:
    left, right = pair()
    seen, record = recorder()
    loop.register(left, mask, lambda key, mask: record(key.fileobj, mask))
    if mask == READ:
        right.send(b"x")  # a fresh socket is writable already, and readable once sent to
    loop.run_once()
    assert seen == [(left, mask)], reason(why)


@pytest.mark.task(taskno=1)
def test_a_socket_that_is_not_ready_runs_nothing(loop: EventLoop, pair: Callable[[], Pair]) -> None:
    ready, ready_peer = pair()
    idle, _ = pair()
    seen, record = recorder()
    loop.register(ready, READ, lambda key, mask: record("ready"))
    loop.register(idle, READ, lambda key, mask: record("idle"))
    ready_peer.send(b"x")
    loop.run_once()
    assert seen == ["ready"], reason("s1-loop.only-the-socket-that-select")


@pytest.mark.task(taskno=1)
def test_a_callback_that_raises_goes_to_the_handler_and_the_turn_goes_on(
    loop: EventLoop, pair: Callable[[], Pair], caught: list[tuple[Exception, Callback]]
) -> None:
    first, first_peer = pair()
    second, second_peer = pair()
    seen, record = recorder()

    def bad(key: selectors.SelectorKey, mask: int) -> None:
        raise ValueError("a bad callback")

    loop.register(first, READ, bad)
    loop.register(second, READ, lambda key, mask: record("good"))
    first_peer.send(b"x")
    second_peer.send(b"x")
    run_once_keeping_errors_in(loop)  # the exception is the handler's business (see _run)
    assert seen == ["good"], reason("s1-loop.the-other-ready-socket-s")
    assert len(caught) == 1, reason("s1-loop.the-exception-should-reach-the")
    exc, callback = caught[0]
    assert isinstance(exc, ValueError) and callback is bad, reason(
        "s1-loop.the-handler-got-from-not", exc=repr(exc), callback=repr(callback)
    )


@pytest.mark.task(taskno=1)
@pytest.mark.parametrize("fd_reused", [False, True])
def test_a_socket_unregistered_earlier_in_the_same_turn_runs_nothing(
    loop: EventLoop, pair: Callable[[], Pair], fd_reused: bool
) -> None:
    """Whichever callback runs first unregisters the other socket, as a fetch does when it
    closes its socket.  With ``fd_reused`` it also closes it and registers a new socket on
    the same file descriptor, as the next fetch's socket() may get it: the stale key of
    select()'s answer names a registered fd, but not the key registered for it now."""
    one, one_peer = pair()
    two, two_peer = pair()
    seen, record = recorder()
    heirs: list[socket.socket] = []

    def runs_and_unregisters(me: str, other: socket.socket) -> Callback:
        def callback(key: selectors.SelectorKey, mask: int) -> None:
            record(me)
            fd = other.fileno()
            loop.unregister(other)
            if fd_reused:
                other.close()
                new, _ = pair()
                if new.fileno() != fd:  # put it on the freed fd, as socket() may
                    os.dup2(new.fileno(), fd)
                    new = socket.socket(fileno=fd)
                    heirs.append(new)
                loop.register(new, READ, record)

        return callback

    loop.register(one, READ, runs_and_unregisters("one", two))
    loop.register(two, READ, runs_and_unregisters("two", one))
    one_peer.send(b"x")
    two_peer.send(b"x")
    try:
        loop.run_once()  # select() reports both; whichever runs first unregisters the other
    finally:
        for sock in heirs:
            loop.unregister(sock)
            sock.close()
    if fd_reused:
        assert len(seen) == 1, reason("s1-loop.stale-key-ran", seen=seen)
    assert len(seen) == 1, reason("s1-loop.unregistered-ran", seen=seen)


# --- task 2: timers that are due --------------------------------------------------------


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_call_soon_runs_its_callback_with_its_arguments(loop: EventLoop) -> None:
    seen, record = recorder()
    loop.call_soon(record, 1, "two")
    loop.run_once()
    assert seen == [(1, "two")], reason("s1-loop.a-timer-that-is-due")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_timers_run_in_time_order_and_ties_in_the_order_they_were_set(loop: EventLoop) -> None:
    seen, record = recorder()
    loop.call_later(0.06, record, "late")
    loop.call_later(0.03, record, "early-1")
    loop.call_later(0.03, record, "early-2")
    loop.call_soon(record, "soon")
    loop.run_until(lambda: "late" in seen)
    assert seen == ["soon", "early-1", "early-2", "late"], reason(
        "s1-loop.the-timers-ran-as-earliest", seen=seen
    )


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_a_timer_that_is_not_due_waits_for_a_later_turn(loop: EventLoop) -> None:
    seen, record = recorder()
    loop.call_later(30, record, "in half a minute")
    loop.call_soon(record, "now")
    loop.run_once()
    assert seen == ["now"], reason("s1-loop.only-the-timers-whose-time")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_a_timer_that_falls_due_while_select_waits_runs_this_turn(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in clock that select() moves on by a second, as a real wait would: the
    timer due half a second in is due when select() returns, so it runs in this turn.
    The clock is read for the timers after the wait, not before it."""
    clock = [1000.0]
    monkeypatch.setattr(loop, "time", lambda: clock[0])
    real_select = loop.selector.select

    def select(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        clock[0] += 1.0  # the second the wait took
        return real_select(0)

    monkeypatch.setattr(loop.selector, "select", select)
    seen, record = recorder()
    loop.call_later(0.5, record, "due during the wait")
    loop.run_once()
    assert seen == ["due during the wait"], reason("s1-loop.due-during-the-wait")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_a_timer_due_exactly_now_runs_this_turn(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock that stands still: a timer set for now is due now ("at most now")."""
    monkeypatch.setattr(loop, "time", lambda: 1000.0)
    seen, record = recorder()
    loop.call_soon(record, "due")
    loop.run_once()
    assert seen == ["due"], reason("s1-loop.a-timer-whose-time-is")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_a_cancelled_timer_never_runs(loop: EventLoop) -> None:
    seen, record = recorder()
    cancelled = loop.call_soon(record, "cancelled")
    loop.call_soon(record, "kept")
    cancelled.cancel()
    loop.run_once()
    assert seen == ["kept"], reason("s1-loop.ran-a-cancelled-timer-must", seen=seen)


@pytest.mark.task(taskno=2)
def test_a_timer_cancelled_by_a_socket_callback_of_the_same_turn_does_not_run(
    loop: EventLoop, pair: Callable[[], Pair]
) -> None:
    left, right = pair()
    seen, record = recorder()
    timeout = loop.call_soon(record, "timeout")

    def response_arrived(key: selectors.SelectorKey, mask: int) -> None:
        record("response")
        timeout.cancel()  # as a fetch cancels its own timeout when its answer comes in

    loop.register(left, READ, response_arrived)
    right.send(b"x")
    loop.run_once()
    assert seen == ["response"], reason("s1-loop.sockets-first-then-timers-ask")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_a_timer_that_raises_goes_to_the_handler_and_the_others_still_run(
    loop: EventLoop, caught: list[tuple[Exception, Callback]]
) -> None:
    seen, record = recorder()

    def bad() -> None:
        raise ValueError("a bad timer")

    loop.call_soon(bad)
    loop.call_soon(record, "after")
    run_once_keeping_errors_in(loop)
    assert seen == ["after"], reason("s1-loop.timers-after-error", seen=seen)
    assert [(type(exc), callback) for exc, callback in caught] == [(ValueError, bad)], reason(
        "s1-loop.the-exception-handler-got-the", caught=caught
    )


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("nudge")
def test_many_timers_due_together_run_earliest_first(
    loop: EventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight timers set out of order, all due in one turn: the heap gives them earliest first."""
    clock = [1000.0]
    monkeypatch.setattr(loop, "time", lambda: clock[0])
    seen, record = recorder()
    delays = [5, 3, 8, 1, 7, 2, 6, 4]
    for delay in delays:
        loop.call_later(delay, record, delay)
    clock[0] += 10
    loop.run_once()
    assert seen == sorted(delays), reason("s1-loop.heap-order", seen=seen)


# --- task 3: how long to wait, and when not to ------------------------------------------


class WaitedForNothing(Exception):
    """run_once was still waiting when a helper thread interrupted it."""


def assert_run_once_raises_runtime_error(loop: EventLoop, why: str) -> None:
    """Fail unless run_once raises RuntimeError (the exercise's NotImplementedError aside).

    A select() with nothing registered and no timeout sleeps forever, and no socket can
    wake it: a helper thread interrupts it with a signal instead, after SAFETY_WAKE_S.
    """

    def interrupted(signum: int, frame: object) -> None:
        raise WaitedForNothing

    main = threading.get_ident()
    waker = None
    if hasattr(signal, "pthread_kill"):  # POSIX; elsewhere the time limit ends the wait
        previous = signal.signal(signal.SIGUSR1, interrupted)
        waker = threading.Timer(SAFETY_WAKE_S, signal.pthread_kill, (main, signal.SIGUSR1))
        waker.start()
    try:
        loop.run_once()
    except NotImplementedError:
        raise  # a subclass of RuntimeError, but it says the work is still to do
    except RuntimeError:
        return
    except WaitedForNothing:
        pytest.fail(reason("s1-loop.run-once-waited-s-for", why=why, value2=f"{SAFETY_WAKE_S:g}"))
    finally:
        if waker is not None:
            waker.cancel()
            waker.join()
            signal.signal(signal.SIGUSR1, previous)
    pytest.fail(reason("s1-loop.run-once-should-raise-runtimeerror", why=why))


@pytest.mark.task(taskno=3)
def test_with_nothing_to_wait_for_run_once_raises_runtime_error(loop: EventLoop) -> None:
    assert_run_once_raises_runtime_error(loop, reason("s1-loop.nothing-to-wait-for"))


@pytest.mark.task(taskno=3)
def test_a_cancelled_timer_is_nothing_to_wait_for(loop: EventLoop) -> None:
    seen, record = recorder()
    loop.call_later(0.01, record, "cancelled").cancel()
    assert_run_once_raises_runtime_error(loop, reason("s1-loop.only-timer-cancelled"))
    assert seen == [], reason("s1-loop.ran-a-cancelled-timer-must", seen=seen)


@pytest.mark.task(taskno=3)
def test_a_timer_alone_is_run_on_time(loop: EventLoop, idle: None) -> None:
    seen, record = recorder()
    loop.call_later(0.2, record, "due")
    took = timed_run_once(loop)
    assert seen == ["due"], reason("s1-loop.run-once-returned-after-s", took=f"{took:.2f}")
    assert took >= 0.15, reason("s1-loop.run-once-returned-after-s-2", took=f"{took:.2f}")
    assert took < 1.5, reason("s1-loop.overslept", took=f"{took:.2f}", due=0.2)


@pytest.mark.task(taskno=3)
def test_a_cancelled_timer_does_not_cut_the_wait_short(loop: EventLoop, idle: None) -> None:
    seen, record = recorder()
    loop.call_later(0.05, record, "cancelled").cancel()
    loop.call_later(0.3, record, "due")
    took = timed_run_once(loop)
    assert seen == ["due"], reason("s1-loop.woke-after-s-and-ran", took=f"{took:.2f}", seen=seen)
    assert took < 1.5, reason("s1-loop.overslept", took=f"{took:.2f}", due=0.3)


@pytest.mark.task(taskno=3)
def test_with_no_timer_select_waits_for_a_socket(
    loop: EventLoop,
    pair: Callable[[], Pair],
    send_later: Callable[[socket.socket, float], None],
) -> None:
    left, right = pair()
    seen, record = recorder()
    loop.register(left, READ, lambda key, mask: record("woken"))
    send_later(right, 0.2)
    took = timed_run_once(loop)
    assert seen == ["woken"], reason("s1-loop.run-once-returned-after-s-3", took=f"{took:.2f}")
    assert took >= 0.15, reason("s1-loop.run-once-returned-after-s-4", took=f"{took:.2f}")


@pytest.mark.task(taskno=3)
def test_a_timer_is_something_to_wait_for_even_with_no_socket(loop: EventLoop) -> None:
    """No socket registered, one timer 0.1 s away (a --delay, a retry): sleep, then run it."""
    seen, record = recorder()
    loop.call_later(0.1, record, "due")
    try:
        took = timed_run_once(loop)
    except NotImplementedError:
        raise  # the work is still to do
    except RuntimeError as exc:
        pytest.fail(reason("s1-loop.a-timer-is-work", error=repr(exc)))
    assert seen == ["due"], reason("s1-loop.run-once-returned-after-s", took=f"{took:.2f}")


@pytest.mark.task(taskno=3)
@pytest.mark.parametrize(
    ("timers", "due"),
    [
        ([(20, False), (3, False), (10, False), (6, False)], 3.0),
        ([(0.5, True), (1, True), (1.5, True), (20, False), (3, False), (10, False)], 3.0),
        ([(0.5, True), (1, True)], None),
    ],
    ids=["timers-set-out-of-order", "cancelled-timers-on-top", "only-cancelled-timers"],
)
def test_select_is_given_the_time_until_the_first_live_timer(
    loop: EventLoop,
    pair: Callable[[], Pair],
    monkeypatch: pytest.MonkeyPatch,
    timers: list[tuple[float, bool]],
    due: float | None,
) -> None:
    """Counted, not timed: the one timeout select() is asked to sleep, with a socket
    registered and timers (some cancelled) on the heap.  The heap is ordered only at its
    top, and several cancelled timers may lead it: the wait is until the first live one,
    or as long as it takes when none is left.  The stand-in select() returns at once."""
    left, _ = pair()
    loop.register(left, READ, lambda key, mask: None)
    for delay, cancelled in timers:
        handle = loop.call_later(delay, lambda: None)
        if cancelled:
            handle.cancel()
    asked: list[float | None] = []

    def select(timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        asked.append(timeout)
        return []

    monkeypatch.setattr(loop.selector, "select", select)
    loop.run_once()
    assert len(asked) == 1, reason("s1-loop.one-select-per-turn", count=len(asked))
    [timeout] = asked
    said = "None" if timeout is None else f"{timeout:.2f}"
    if due is None:
        assert timeout is None, reason("s1-loop.cancelled-timers-set-no-wait", timeout=said)
    else:
        # A hair over due is the clock's, not the loop's: where it reads the same twice (a
        # browser's is coarse), call_later's (now + due) - now may round up by one ulp.
        assert timeout is not None and due - 1 < timeout <= due + 1e-6, reason(
            "s1-loop.wait-for-the-first-live-timer", timeout=said, due=f"{due:g}"
        )
