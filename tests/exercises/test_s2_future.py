"""Exercise s2-future: a Future settles once, schedules its callbacks, and can be waited on.

Task 1 is `Future._finish`, task 2 `Future.add_done_callback`, task 3 `Future.__iter__`
(see shared/tools/exercises/s2-future/README.md). Each test makes a fresh stage 2 EventLoop and
drives it for a few seconds at most, so a lost wake-up fails a test instead of hanging it.
"""

from __future__ import annotations

import sys
from functools import partial
from itertools import pairwise
from typing import Any, TypeVar

import pytest
from reasons import reason
from stage2_loop import loop_fixture, raises, run  # noqa: F401 (the fixture `loop`)

from stage2_generators.futures import CancelledError, Coroutine, Future, InvalidStateError
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task

T = TypeVar("T")


def waiter(fut: Future[T]) -> Coroutine[T]:
    """The smallest coroutine that waits for a future."""
    return (yield from fut)


# --- Task 1: Future._finish --------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_set_result_settles_the_future_once(loop: EventLoop) -> None:
    """set_result stores the value; after that the future refuses any other outcome."""
    fut: Future[int] = Future()
    assert not fut.done(), "a new future is pending"
    fut.set_result(7)
    assert fut.done() and not fut.cancelled(), "after set_result the future is done"
    assert fut.result() == 7 and fut.exception() is None, "the future should hold its result"
    with raises(InvalidStateError, reason("s2-future.settles-once")):
        fut.set_result(8)
    with raises(InvalidStateError, "set_exception on a done future must raise"):
        fut.set_exception(ValueError("too late"))
    assert fut.cancel() is False, "a done future cannot be cancelled"
    assert fut.result() == 7, "the first outcome stays"


@pytest.mark.task(taskno=1)
def test_set_exception_stores_the_error_for_result_to_raise(loop: EventLoop) -> None:
    """set_exception stores the error: exception() returns it and result() raises it."""
    fut: Future[int] = Future()
    error = ValueError("bad page")
    fut.set_exception(error)
    assert fut.done() and not fut.cancelled(), (
        "after set_exception the future is done, not cancelled"
    )
    assert fut.exception() is error, "exception() must give the very error set"
    with pytest.raises(ValueError) as info:
        fut.result()
    assert info.value is error, "result() must raise the very error set"
    with pytest.raises(InvalidStateError):
        fut.set_result(1)


@pytest.mark.task(taskno=1)
def test_cancel_settles_the_future_as_cancelled(loop: EventLoop) -> None:
    """cancel() is the third way to settle: result() then raises CancelledError."""
    fut: Future[int] = Future()
    assert fut.cancel() is True, "cancel() of a pending future must return True"
    assert fut.done() and fut.cancelled(), "after cancel() the future is done and cancelled"
    with pytest.raises(CancelledError):
        fut.result()
    assert fut.cancel() is False, "cancel() of a done future must return False"
    with pytest.raises(InvalidStateError):
        fut.set_result(1)


# --- Task 2: Future.add_done_callback (and the scheduling in _finish) --------------------------


@pytest.mark.task(taskno=2)
def test_callbacks_run_on_the_loop_not_inside_set_result(loop: EventLoop) -> None:
    """Callbacks are scheduled with call_soon: they run on the loop's next turn, once each."""
    fut: Future[int] = Future()
    seen: list[tuple[str, Any]] = []
    fut.add_done_callback(lambda f: seen.append(("first", f)))
    fut.add_done_callback(lambda f: seen.append(("second", f.result())))
    fut.set_result(5)
    assert seen == [], "set_result called the callbacks itself: schedule them with call_soon"
    loop.run_once()
    assert seen == [("first", fut), ("second", 5)], "each callback gets the future, in order"
    loop.call_soon(lambda: None)  # give the loop one more turn with something to run
    loop.run_once()
    assert len(seen) == 2, "a callback ran twice"


@pytest.mark.task(taskno=2)
def test_a_callback_added_to_a_done_future_is_scheduled_too(loop: EventLoop) -> None:
    """Subscribing late is not an error: the callback is scheduled at once, not called."""
    fut: Future[str] = Future()
    fut.set_result("ready")
    seen: list[str] = []
    fut.add_done_callback(lambda f: seen.append(f.result()))
    assert seen == [], "the callback ran inside add_done_callback: schedule it instead"
    try:
        loop.run_once()
    except RuntimeError as exc:
        if isinstance(exc, NotImplementedError):
            raise
        pytest.fail(reason("s2-future.late-callback", why=exc))
    assert seen == ["ready"], reason("s2-future.late-callback", why=f"ran {seen}")


@pytest.mark.task(taskno=2)
def test_failure_and_cancellation_run_the_callbacks_too(loop: EventLoop) -> None:
    """Every way of settling a future runs its callbacks."""
    failed: Future[int] = Future()
    cancelled: Future[int] = Future()
    seen: list[str] = []
    failed.add_done_callback(lambda f: seen.append(f"failed: {f.exception()}"))
    cancelled.add_done_callback(lambda f: seen.append(f"cancelled: {f.cancelled()}"))
    failed.set_exception(ValueError("bad"))
    cancelled.cancel()
    loop.run_once()
    assert seen == ["failed: bad", "cancelled: True"], (
        f"ran {seen}: set_exception and cancel must run the callbacks too"
    )


@pytest.mark.task(taskno=2)
def test_a_chain_of_futures_resolving_each_other_keeps_the_stack_flat(loop: EventLoop) -> None:
    """Each callback resolves the next future: scheduled, the stack never grows with the chain.

    Called inline, the 2,000 callbacks would nest 2,000 set_result calls (a RecursionError).
    """
    futures: list[Future[int]] = [Future() for _ in range(2000)]
    depths: list[int] = []

    def pass_on(following: Future[int], fut: Future[int]) -> None:
        depths.append(stack_depth())
        following.set_result(fut.result() + 1)

    for fut, following in pairwise(futures):
        fut.add_done_callback(partial(pass_on, following))
    futures[0].set_result(0)
    assert run(loop, futures[-1]) == 1999, "the chain of futures did not end with 1999"
    assert len(depths) == 1999, f"{len(depths)} callbacks ran, not 1999"
    assert max(depths) == min(depths), "the stack grew along the chain: callbacks ran inline"


def stack_depth() -> int:
    """The number of frames below the caller's."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


# --- Task 3: Future.__iter__ -------------------------------------------------------------------


@pytest.mark.task(taskno=3)
def test_yield_from_a_pending_future_hands_it_to_the_driver(loop: EventLoop) -> None:
    """A coroutine at `yield from future` yields the future itself, then returns its result."""
    fut: Future[int] = Future()
    coro = waiter(fut)
    assert coro.send(None) is fut, "the driver must receive the future it should wait for"
    fut.set_result(42)
    with raises(StopIteration, "resumed, the coroutine should return") as stop:
        coro.send(None)  # resumed: the coroutine reads the result from the future itself
    assert stop.value.value == 42, (
        f"`yield from future` gave {stop.value.value!r}, not the future's result"
    )


@pytest.mark.task(taskno=3)
def test_yield_from_a_done_future_does_not_pause(loop: EventLoop) -> None:
    """Footnote 12: a future that is already done returns (or raises) without a pause."""
    done: Future[int] = Future()
    done.set_result(42)
    with raises(StopIteration, reason("s2-future.no-pause")) as stop:
        waiter(done).send(None)  # the very first send finishes the coroutine
    assert stop.value.value == 42, (
        f"`yield from future` gave {stop.value.value!r}, not the future's result"
    )
    failed: Future[int] = Future()
    failed.set_exception(ValueError("failed before anyone waited"))
    with pytest.raises(ValueError, match="failed before anyone waited"):
        waiter(failed).send(None)


@pytest.mark.task(taskno=3)
def test_a_failed_future_raises_at_the_yield_from(loop: EventLoop) -> None:
    """The exception stored in the future comes out of `yield from`, after a pause too."""
    fut: Future[int] = Future()
    coro = waiter(fut)
    assert coro.send(None) is fut, "the driver must receive the future it should wait for"
    fut.set_exception(ValueError("connection reset"))
    with pytest.raises(ValueError, match="connection reset"):
        coro.send(None)
    cancelled: Future[int] = Future()
    cancelled.cancel()
    with pytest.raises(CancelledError):
        waiter(cancelled).send(None)


@pytest.mark.task(taskno=3)
def test_tasks_wait_for_one_future_with_yield_from(loop: EventLoop) -> None:
    """Two tasks wait for one future that a timer resolves; both get its value."""
    fut: Future[str] = Future()
    loop.call_later(0.01, fut.set_result, "page")

    def both() -> Coroutine[list[str]]:
        first, second = Task(waiter(fut)), Task(waiter(fut))
        return [(yield from first), (yield from second)]

    assert run(loop, both()) == ["page", "page"], (
        "two tasks waiting on one future should both get its result"
    )


@pytest.mark.task(taskno=3)
def test_try_except_around_yield_from_a_future_catches_its_error(loop: EventLoop) -> None:
    """A future that fails later lets the waiting coroutine catch the error where it waited."""
    fut: Future[str] = Future()
    loop.call_later(0.01, fut.set_exception, ConnectionResetError("reset by peer"))

    def careful() -> Coroutine[str]:
        try:
            return (yield from fut)
        except ConnectionResetError as exc:
            return f"caught: {exc}"

    assert run(loop, careful()) == "caught: reset by peer", (
        "a try around `yield from future` should catch the future's error"
    )
