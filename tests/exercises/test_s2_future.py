"""Exercise s2-future: a Future settles once, schedules its callbacks, and can be waited on.

Task 1 is `Future._finish`, task 2 `Future.add_done_callback`, task 3 `Future.__iter__`
(see shared/tools/exercises/s2-future/README.md). Each test makes a fresh stage 2 EventLoop and
drives it for a few seconds at most, so a lost wake-up fails a test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterator
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
    assert not fut.done(), reason("s2-future.new-pending")
    fut.set_result(7)
    assert fut.done() and not fut.cancelled(), reason("s2-future.done-after-result")
    assert fut.result() == 7 and fut.exception() is None, reason("s2-future.holds-result")
    with raises(InvalidStateError, reason("s2-future.settles-once")):
        fut.set_result(8)
    with raises(InvalidStateError, reason("s2-future.exception-after-done")):
        fut.set_exception(ValueError("too late"))
    assert fut.cancel() is False, reason("s2-future.done-not-cancellable")
    assert fut.result() == 7, reason("s2-future.first-stays")


@pytest.mark.task(taskno=1)
def test_set_exception_stores_the_error_for_result_to_raise(loop: EventLoop) -> None:
    """set_exception stores the error: exception() returns it and result() raises it."""
    fut: Future[int] = Future()
    error = ValueError("bad page")
    fut.set_exception(error)
    assert fut.done() and not fut.cancelled(), reason("s2-future.done-not-cancelled")
    assert fut.exception() is error, reason("s2-future.same-exception")
    with pytest.raises(ValueError) as info:
        fut.result()
    assert info.value is error, reason("s2-future.raises-same")
    with raises(InvalidStateError, reason("s2-future.settled-by-its-error")):
        fut.set_result(1)


@pytest.mark.task(taskno=1)
def test_cancel_settles_the_future_as_cancelled(loop: EventLoop) -> None:
    """cancel() is the third way to settle: result() then raises CancelledError."""
    fut: Future[int] = Future()
    assert fut.cancel() is True, reason("s2-future.cancel-pending")
    assert fut.done() and fut.cancelled(), reason("s2-future.cancelled-done")
    with pytest.raises(CancelledError):
        fut.result()
    assert fut.cancel() is False, reason("s2-future.cancel-done")
    with raises(InvalidStateError, reason("s2-future.settled-by-its-cancel")):
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
    assert seen == [], reason("s2-future.called-itself")
    loop.run_once()
    assert seen == [("first", fut), ("second", 5)], reason("s2-future.callback-order")
    loop.call_soon(lambda: None)  # give the loop one more turn with something to run
    loop.run_once()
    assert len(seen) == 2, reason("s2-future.ran-twice")


@pytest.mark.task(taskno=2)
def test_a_callback_waits_for_its_future_to_settle(loop: EventLoop) -> None:
    """However often the loop turns meanwhile, a pending future's callback waits: it runs
    only once the future is done."""
    fut: Future[int] = Future()
    seen: list[bool] = []
    fut.add_done_callback(lambda f: seen.append(f.done()))
    for _ in range(2):  # two turns with something else to run
        loop.call_soon(lambda: None)
        loop.run_once()
    assert seen == [], reason("s2-future.ran-while-pending", seen=seen)
    fut.set_result(1)
    loop.run_once()
    assert seen == [True], reason("s2-future.kept-callback-never-ran", seen=seen)


@pytest.mark.task(taskno=2)
def test_a_callback_added_to_a_done_future_is_scheduled_too(loop: EventLoop) -> None:
    """Subscribing late is not an error: the callback is scheduled at once, not called."""
    fut: Future[str] = Future()
    fut.set_result("ready")
    seen: list[str] = []
    fut.add_done_callback(lambda f: seen.append(f.result()))
    assert seen == [], reason("s2-future.ran-inside")
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
    assert seen == ["failed: bad", "cancelled: True"], reason(
        "s2-future.settle-runs-callbacks", seen=seen
    )


@pytest.mark.task(taskno=2)
def test_a_chain_of_futures_resolving_each_other_keeps_the_stack_flat(loop: EventLoop) -> None:
    """Each callback resolves the next future: scheduled, the stack never grows with the chain.

    Called inline, the 200 callbacks would nest 200 set_result calls, which the depths show.
    (Not 2,000, deep enough for a RecursionError: in a browser tab, whose stack is smaller
    than a terminal's, such a chain overflows the stack itself and stops Python.)
    """
    futures: list[Future[int]] = [Future() for _ in range(200)]
    depths: list[int] = []

    def pass_on(following: Future[int], fut: Future[int]) -> None:
        depths.append(stack_depth())
        following.set_result(fut.result() + 1)

    for fut, following in pairwise(futures):
        fut.add_done_callback(partial(pass_on, following))
    futures[0].set_result(0)
    assert run(loop, futures[-1]) == 199, reason("s2-future.chain-end")
    assert len(depths) == 199, reason("s2-future.callbacks-ran", count=len(depths))
    assert max(depths) == min(depths), reason("s2-future.stack-grew")


class Callback:
    """A callback that a weak reference can follow: is anyone still holding it?"""

    def __call__(self, fut: Future[Any]) -> None:
        """Run as a done callback: nothing to do."""


@pytest.mark.task(taskno=2)
def test_a_done_future_forgets_its_callbacks(loop: EventLoop) -> None:
    """Once scheduled, a callback belongs to the loop: the done future no longer holds it.

    A Task's wake-up is such a callback: a future that kept its callbacks would keep
    every task that ever waited for it alive as long as itself.
    """
    fut: Future[int] = Future()
    before, after = Callback(), Callback()
    held = [weakref.ref(before), weakref.ref(after)]
    fut.add_done_callback(before)
    fut.set_result(1)
    fut.add_done_callback(after)
    del before, after
    loop.run_once()
    kept = sum(ref() is not None for ref in held)
    assert kept == 0, reason("s2-future.keeps-callbacks", kept=kept)


def stack_depth() -> int:
    """The number of frames below the caller's."""
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


# --- Task 3: Future.__iter__ -------------------------------------------------------------------


@contextlib.contextmanager
def returned_instead(key: str = "s2-future.failed-future-returned") -> Iterator[None]:
    """Say so when `yield from` a failed future returned (StopIteration) instead of raising."""
    try:
        yield
    except StopIteration as stop:
        pytest.fail(reason(key, value=repr(stop.value)))


@pytest.mark.task(taskno=3)
def test_yield_from_a_pending_future_hands_it_to_the_driver(loop: EventLoop) -> None:
    """A coroutine at `yield from future` yields the future itself, then returns its result."""
    fut: Future[int] = Future()
    coro = waiter(fut)
    assert coro.send(None) is fut, reason("s2-future.driver-gets-future")
    fut.set_result(42)
    with raises(StopIteration, reason("s2-future.resumed-returns")) as stop:
        coro.send(None)  # resumed: the coroutine reads the result from the future itself
    assert stop.value.value == 42, reason("s2-future.gave", value=repr(stop.value.value))


@pytest.mark.task(taskno=3)
def test_yield_from_a_done_future_does_not_pause(loop: EventLoop) -> None:
    """Footnote 12: a future that is already done returns (or raises) without a pause."""
    done: Future[int] = Future()
    done.set_result(42)
    with raises(StopIteration, reason("s2-future.no-pause")) as stop:
        waiter(done).send(None)  # the very first send finishes the coroutine
    assert stop.value.value == 42, reason("s2-future.gave", value=repr(stop.value.value))
    failed: Future[int] = Future()
    failed.set_exception(ValueError("failed before anyone waited"))
    with pytest.raises(ValueError, match="failed before anyone waited"), returned_instead():
        waiter(failed).send(None)


@pytest.mark.task(taskno=3)
def test_a_failed_future_raises_at_the_yield_from(loop: EventLoop) -> None:
    """The exception stored in the future comes out of `yield from`, after a pause too."""
    fut: Future[int] = Future()
    coro = waiter(fut)
    assert coro.send(None) is fut, reason("s2-future.driver-gets-future")
    fut.set_exception(ValueError("connection reset"))
    with pytest.raises(ValueError, match="connection reset"), returned_instead():
        coro.send(None)
    cancelled: Future[int] = Future()
    cancelled.cancel()
    with pytest.raises(CancelledError), returned_instead("s2-future.cancelled-future-returned"):
        waiter(cancelled).send(None)
    later: Future[int] = Future()  # cancelled while the coroutine waits for it
    coro = waiter(later)
    assert coro.send(None) is later, reason("s2-future.driver-gets-future")
    later.cancel()
    with pytest.raises(CancelledError), returned_instead("s2-future.cancelled-future-returned"):
        coro.send(None)


@pytest.mark.task(taskno=3)
def test_tasks_wait_for_one_future_with_yield_from(loop: EventLoop) -> None:
    """Two tasks wait for one future that a timer resolves; both get its value."""
    fut: Future[str] = Future()
    loop.call_later(0.01, fut.set_result, "page")

    def both() -> Coroutine[list[str]]:
        first, second = Task(waiter(fut)), Task(waiter(fut))
        return [(yield from first), (yield from second)]

    assert run(loop, both()) == ["page", "page"], reason("s2-future.both-get-result")


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

    assert run(loop, careful()) == "caught: reset by peer", reason("s2-future.try-catches")
