"""Exercise s2-timeout: timeouts by cancellation.

Task 1 is `Task.cancel`, task 2 `timeout` (see shared/tools/exercises/s2-timeout/README.md).
Each test makes a fresh stage 2 EventLoop and drives it for a few seconds at most.
"""

from __future__ import annotations

import heapq
import socket
import time
from typing import TypeVar

import pytest
from reasons import reason
from stage2_loop import (  # noqa: F401 (the fixture `loop`)
    cancel_one_that_catches_it,
    loop_fixture,
    raises,
    run,
)

from stage2_generators.events import get_running_loop
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop, Handle
from stage2_generators.sockets import sock_recv
from stage2_generators.tasks import Task, sleep, timeout

T = TypeVar("T")

NOT_WOKEN = reason("s2-timeout.not-woken")
OUTSIDE = reason("s2-timeout.outside")


def live_timers(loop: EventLoop) -> int:
    """How many timers the loop still holds that have not been cancelled."""
    return sum(not handle._cancelled for _, _, handle in loop._scheduled)


def guarded(events: list[str], delay: float = 10.0) -> Coroutine[str]:
    """Sleep for `delay` seconds, noting where the coroutine was when it stopped."""
    try:
        events.append("sleeping")
        yield from sleep(delay)
        events.append("woke up")
        return "slept"
    finally:
        events.append("finally")


# --- Task 1: Task.cancel ------------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_cancel_lands_at_the_pause_and_the_finally_block_runs_on_the_loop(
    loop: EventLoop,
) -> None:
    """cancel() only asks: the coroutine gets CancelledError at its next step, on the loop."""
    events: list[str] = []
    task = Task(guarded(events))
    loop.run_once()  # the first step: the coroutine now sleeps
    assert task.cancel() is True, reason("s2-timeout.cancel-of-a-waiting-task")
    assert events == ["sleeping"], reason("s2-timeout.the-clean-up-ran-inside")
    assert not task.done(), reason("s2-timeout.cancel-only-asks-the-task")
    start = time.monotonic()
    with raises(CancelledError, reason("s2-timeout.a-cancelled-task-must-end")):
        run(loop, task, explain=lambda: NOT_WOKEN)
    assert time.monotonic() - start < 1, reason("s2-timeout.the-task-slept-on-cancel")
    assert events == ["sleeping", "finally"], reason(
        "s2-timeout.the-coroutine-did-its-finally", events=events
    )
    assert task.cancelled(), reason("s2-timeout.the-task-should-be-cancelled")
    assert live_timers(loop) == 0, reason("s2-timeout.the-sleep-s-timer-was")


@pytest.mark.task(taskno=1)
def test_cancel_says_whether_there_was_anything_to_cancel(loop: EventLoop) -> None:
    """False for a task that is done already, whose result stays as it was."""
    task = Task(guarded([], delay=0))
    assert run(loop, task) == "slept", reason("s2-timeout.the-task-should-finish-its")
    assert task.cancel() is False, reason("s2-timeout.cancel-of-a-task-that")
    assert not task.cancelled() and task.result() == "slept", reason(
        "s2-timeout.a-done-task-s-result"
    )


@pytest.mark.task(taskno=1)
def test_a_coroutine_may_catch_its_cancellation(loop: EventLoop) -> None:
    """A coroutine that catches CancelledError and returns gives its task a result."""

    assert run(loop, cancel_one_that_catches_it()) == ("cleaned up", False), reason(
        "s2-timeout.a-coroutine-that-catches-cancellederror"
    )


@pytest.mark.task(taskno=1)
def test_a_task_cancelled_before_it_started_never_runs(loop: EventLoop) -> None:
    """Cancelled between Task() and its first step: the coroutine's body never runs."""
    events: list[str] = []
    task = Task(guarded(events))
    assert task.cancel() is True, reason("s2-timeout.cancel-of-a-task-not")
    loop.run_once()  # the first step: it must throw CancelledError in, not start the body
    assert events == [], reason("s2-timeout.started-although-cancelled")
    with raises(CancelledError, reason("s2-timeout.the-cancelled-task-should-end")):
        run(loop, task)
    assert events == [] and task.cancelled(), reason("s2-timeout.a-task-cancelled-before-it")


@pytest.mark.task(taskno=1)
def test_cancelling_a_task_cancels_the_task_it_waits_for(loop: EventLoop) -> None:
    """The future a task waits on is cancelled with it: here, another task."""
    events: list[str] = []
    inner = Task(guarded(events))

    def outer() -> Coroutine[str]:
        return (yield from inner)

    waiting = Task(outer())

    def main() -> Coroutine[None]:
        yield from sleep(0.01)
        waiting.cancel()
        with raises(CancelledError, reason("s2-timeout.the-cancelled-task-should-end")):
            yield from waiting

    run(loop, main())
    assert waiting.cancelled() and inner.cancelled(), reason(
        "s2-timeout.cancelling-a-task-must-cancel"
    )
    assert events == ["sleeping", "finally"], reason(
        "s2-timeout.the-coroutine-did-its-finally", events=events
    )


@pytest.mark.task(taskno=1)
def test_cancel_counts_every_request(loop: EventLoop) -> None:
    """Two requests before the step: both count, and one CancelledError comes of them."""
    events: list[str] = []
    task = Task(guarded(events))
    loop.run_once()  # the coroutine now sleeps
    assert task.cancel() is True, reason("s2-timeout.cancel-of-a-waiting-task")
    assert task.cancel() is True, reason("s2-timeout.the-first-request-has-not")
    assert task.cancelling() == 2, reason("s2-timeout.each-cancel-of-a-task")
    with raises(CancelledError, reason("s2-timeout.the-cancelled-task-should-end")):
        run(loop, task)
    assert events == ["sleeping", "finally"], reason(
        "s2-timeout.the-coroutine-did-its-finally-2", events=events
    )
    assert task.cancel() is False, reason("s2-timeout.cancel-of-a-task-that")
    assert task.cancelling() == 2, reason("s2-timeout.a-task-that-is-done")


@pytest.mark.task(taskno=1)
def test_a_task_may_cancel_itself(loop: EventLoop) -> None:
    """cancel() from inside the running coroutine lands at its next `yield from`."""
    events: list[str] = []
    me: list[Task[None]] = []

    def selfish() -> Coroutine[None]:
        assert me[0].cancel() is True, reason("s2-timeout.a-task-may-cancel-itself")
        events.append("asked")
        try:
            fut: Future[None] = Future()
            get_running_loop().call_soon(fut.set_result, None)
            yield from fut
            events.append("resumed")
        except CancelledError:
            events.append("cancelled")
            raise

    me.append(Task(selfish()))
    with raises(CancelledError, reason("s2-timeout.the-cancelled-task-should-end")):
        run(loop, me[0])
    assert events == ["asked", "cancelled"], reason(
        "s2-timeout.the-coroutine-did-a-task", events=events
    )


# --- Task 2: timeout ----------------------------------------------------------------------------


def bounded(delay: float, coro: Coroutine[T]) -> Coroutine[T]:
    """Run `coro` in the calling task, inside `with timeout(delay)`."""
    with timeout(delay):
        return (yield from coro)


@pytest.mark.task(taskno=2)
def test_a_result_in_time_passes_through_and_leaves_no_timer(loop: EventLoop) -> None:
    """Done before the timeout: its value comes back, and the timeout's timer is cancelled."""
    assert run(loop, bounded(2, guarded([], delay=0.01))) == "slept", reason(
        "s2-timeout.a-block-that-ends-in"
    )
    assert live_timers(loop) == 0, reason("s2-timeout.the-timeout-s-timer-is")


@pytest.mark.task(taskno=2)
def test_a_timeout_outside_a_task_raises_runtime_error(loop: EventLoop) -> None:
    """With no task running there is nothing to cancel: entering the block says so."""
    why = reason("s2-timeout.the-block-ran-outside-a")
    try:
        with raises(RuntimeError, why), timeout(1):
            pytest.fail(why)
    except (TypeError, LookupError, AttributeError) as other:  # _running[-1], say, unchecked
        error = f"{type(other).__name__}: {other}"
        pytest.fail(reason("loop.raised-instead", why=why, kind="RuntimeError", error=error))


@pytest.mark.task(taskno=2)
def test_an_error_in_time_passes_through(loop: EventLoop) -> None:
    """An exception before the timeout is the caller's exception, not a TimeoutError."""

    def failing() -> Coroutine[None]:
        yield from sleep(0.01)
        raise ConnectionResetError("reset by peer")

    with pytest.raises(ConnectionResetError, match="reset by peer"):
        run(loop, bounded(2, failing()))
    assert live_timers(loop) == 0, reason("s2-timeout.the-timeout-s-timer-is")


@pytest.mark.task(taskno=2)
def test_a_timeout_cancels_the_block_then_raises_timeout_error(loop: EventLoop) -> None:
    """The block is cancelled at its pause; its finally runs before TimeoutError comes out."""
    events: list[str] = []

    def caller() -> Coroutine[None]:
        try:
            yield from bounded(0.05, guarded(events))
        except TimeoutError:
            events.append("TimeoutError")
        except CancelledError:
            events.append("CancelledError")  # the wrong answer: the timeout is lost

    start = time.monotonic()
    run(loop, caller())
    elapsed = time.monotonic() - start
    assert "CancelledError" not in events, reason("s2-timeout.timeout-came-out-as-cancel")
    assert events == ["sleeping", "finally", "TimeoutError"], reason(
        "s2-timeout.the-coroutine-did-the-timed", events=events
    )
    assert 0.05 <= elapsed < 1, reason(
        "s2-timeout.the-timeout-took-s-not", elapsed=f"{elapsed:.2f}"
    )


@pytest.mark.task(taskno=2)
def test_a_timed_out_read_unregisters_its_socket(loop: EventLoop) -> None:
    """A read that never gets its bytes: TimeoutError, and the socket is no longer watched."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    with ours, theirs:
        with pytest.raises(TimeoutError):
            run(loop, bounded(0.05, sock_recv(ours, 100)))
        assert loop.remove_reader(ours) is False, reason("s2-timeout.the-timed-out-read-left")


@pytest.mark.task(taskno=2)
def test_tries_that_time_out_one_after_another_each_time_out(loop: EventLoop) -> None:
    """A worker's tries in one task: each timeout takes its request back, so the next can fire."""

    def tries() -> Coroutine[list[str]]:
        outcomes = []
        for _ in range(3):
            try:
                yield from bounded(0.01, guarded([]))
            except TimeoutError:
                outcomes.append("TimeoutError")
        outcomes.append((yield from bounded(2, guarded([], delay=0))))
        return outcomes

    assert run(loop, tries()) == ["TimeoutError"] * 3 + ["slept"], reason(
        "s2-timeout.each-try-that-times-out"
    )


@pytest.mark.task(taskno=2)
def test_the_tasks_own_cancellation_is_not_a_timeout(loop: EventLoop) -> None:
    """Cancelled from outside: CancelledError passes through, and the block is cancelled."""
    events: list[str] = []
    caller = Task(bounded(3, guarded(events)))

    def main() -> Coroutine[None]:
        yield from sleep(0.02)
        caller.cancel()
        outside = "a cancel from outside the block must stay a CancelledError, not a TimeoutError"
        with raises(CancelledError, outside):  # a TimeoutError here would fail the test
            yield from caller

    start = time.monotonic()
    run(loop, main())
    assert time.monotonic() - start < 1, reason("s2-timeout.the-cancelled-block-went-on")
    assert caller.cancelled(), reason("s2-timeout.the-task-cancelled-from-outside")
    assert events == ["sleeping", "finally"], reason(
        "s2-timeout.the-coroutine-did-its-finally", events=events
    )
    assert live_timers(loop) == 0, reason("s2-timeout.the-timeout-s-timer-is")


def outcome_of(events: list[str], outcome: list[str]) -> Coroutine[None]:
    """A request under a timeout of 0.05 s that notes how it ended."""
    try:
        yield from bounded(0.05, guarded(events))
    except TimeoutError:
        outcome.append("TimeoutError")  # the wrong answer here: the cancel is lost
    except CancelledError:
        outcome.append("CancelledError")
        raise


@pytest.mark.task(taskno=2)
def test_a_cancel_in_the_turn_of_the_timeout_before_it_is_still_a_cancel(
    loop: EventLoop,
) -> None:
    """The task is cancelled in the very turn its timer fires, just before: CancelledError.

    A cancel turned into TimeoutError would be lost: the crawler retries a request that
    timed out, so a worker stopped by Ctrl-C would go on crawling.
    """
    events: list[str] = []
    outcome: list[str] = []
    task = Task(outcome_of(events, outcome))
    loop.call_later(0.05, task.cancel)  # set before the timeout's timer: both run in one turn
    with raises(CancelledError, OUTSIDE):
        run(loop, task)
    assert outcome == ["CancelledError"], reason(
        "s2-timeout.the-block-ended-with-a", outcome=outcome
    )
    assert events == ["sleeping", "finally"], reason("s2-timeout.the-cancelled-request-did-not")


@pytest.mark.task(taskno=2)
def test_a_cancel_in_the_turn_of_the_timeout_after_it_is_still_a_cancel(
    loop: EventLoop,
) -> None:
    """The other order: the timer cancels first, then someone else, before the task's step."""
    events: list[str] = []
    outcome: list[str] = []
    task = Task(outcome_of(events, outcome))
    loop.run_once()  # the first step: the block has begun, the timeout's timer is set

    # Put a cancel right behind the timeout's timer (due first: the sleep's is 10 s away),
    # due at the same moment: the loop runs the two in one turn, in the order they were set.
    when = min(when for when, _, handle in loop._scheduled if not handle._cancelled)
    heapq.heappush(loop._scheduled, (when, next(loop._sequence), Handle(task.cancel, (), when)))
    with raises(CancelledError, OUTSIDE):
        run(loop, task)
    assert outcome == ["CancelledError"], reason(
        "s2-timeout.the-block-ended-with-a", outcome=outcome
    )
    assert events == ["sleeping", "finally"], reason(
        "s2-timeout.the-coroutine-did-its-finally", events=events
    )


@pytest.mark.task(taskno=2)
def test_a_timer_that_fell_due_as_the_block_ended_cancels_nothing(loop: EventLoop) -> None:
    """The block ends in the turn its timer falls due, before the timer's turn: no cancel.

    The block's last wait ends in the same turn the timer falls due, and the task's step
    comes first: leaving the block cancels the timer, and the task goes on undisturbed.
    """
    fut: Future[None] = Future()

    def goes_on() -> Coroutine[str]:
        with timeout(0):  # due at once, but the loop sees it only on its next turn
            yield from fut
        yield from sleep(0.01)  # a cancel from the timer would land here
        return "went on"

    task = Task(goes_on())
    loop.call_soon(fut.set_result, None)  # right after the task's first step, in its turn
    assert run(loop, task) == "went on", reason("s2-timeout.the-task-should-go-on")


@pytest.mark.task(taskno=2)
def test_a_block_entered_after_a_caught_cancel_still_times_out(loop: EventLoop) -> None:
    """Cancelled from outside, the task cleans up under a timeout of its own: the request it
    caught is still counted (cancelling() is 1), and the block that runs late ends in
    TimeoutError all the same, its own timer's request taken back."""

    def cleaning_up() -> Coroutine[str]:
        try:
            yield from sleep(10)
        except CancelledError:
            try:
                with timeout(0.01):
                    yield from sleep(10)  # a clean-up that hangs
            except TimeoutError:
                return "TimeoutError"
            except CancelledError:
                return "CancelledError"
        return "not cancelled"

    task = Task(cleaning_up())
    loop.call_later(0.01, task.cancel)
    outcome = run(loop, task)
    assert outcome == "TimeoutError", reason("s2-timeout.cleanup-not-timed-out", outcome=outcome)


@pytest.mark.task(taskno=2)
def test_an_outer_timeout_around_an_inner_one_that_fired_times_out_too(loop: EventLoop) -> None:
    """The inner timeout fires and is caught inside the outer block, then the outer one fires:
    each took its own request back, so each is a TimeoutError, and the task was never cancelled.
    """

    def nested() -> Coroutine[list[str]]:
        outcomes = []
        try:
            with timeout(0.05):
                try:
                    yield from bounded(0.01, guarded([]))
                except TimeoutError:
                    outcomes.append("inner TimeoutError")
                yield from guarded([])  # sleeps 10 s: the outer timeout ends it
        except TimeoutError:
            outcomes.append("outer TimeoutError")
        except CancelledError:
            outcomes.append("outer CancelledError")
        return outcomes

    task = Task(nested())
    outcomes = run(loop, task)
    assert outcomes == ["inner TimeoutError", "outer TimeoutError"], reason(
        "s2-timeout.nested-timeouts", outcomes=outcomes
    )
    assert task.cancelling() == 0, reason("s2-timeout.requests-left", left=task.cancelling())


@pytest.mark.task(taskno=2)
def test_the_timeout_cancels_the_task_that_entered_the_block(loop: EventLoop) -> None:
    """The running task is the last of _running: when a coroutine runs the loop itself, the
    steps of the tasks that loop runs nest inside its own, and a block entered there times
    out the task that entered it, not the one whose step runs further down."""

    def inner() -> Coroutine[str]:
        try:
            with timeout(0.01):
                yield from sleep(0.3)
        except TimeoutError:
            return "timed out"
        return "slept"

    def outer() -> Coroutine[str]:
        said = get_running_loop().run_until_complete(inner())  # steps inside this step
        yield from sleep(0)  # a cancel meant for the outer task would land here
        return said

    try:
        said = run(loop, outer())
    except CancelledError:
        said = "the outer task cancelled"
    assert said == "timed out", reason("s2-timeout.wrong-task-cancelled", said=repr(said))
