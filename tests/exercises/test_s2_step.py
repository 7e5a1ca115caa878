"""Exercise s2-step: a Task resumes its paused generator with send() and throw().

Task 1 is the send half of `Task._step`, task 2 `Task._wakeup` (with the subscription
in `_step`), task 3 the throw half of `_step`: errors, cancellation, a bad yield,
KeyboardInterrupt and --trace (see shared/tools/exercises/s2-step/README.md). Each test makes
a fresh stage 2 EventLoop and drives it for a few seconds at most.
"""

from __future__ import annotations

import contextlib
import gc
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from reasons import reason
from stage2_loop import (  # noqa: F401 (the fixture `loop`)
    cancel_one_that_catches_it,
    loop_fixture,
    raises,
)
from stage2_loop import run as run_loop

from shared.log import Record
from shared.observe import Observer
from stage2_generators import tasks
from stage2_generators.events import get_running_loop
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task, sleep

T = TypeVar("T")


def unwoken() -> str:
    """Why a paused task was never stepped again, when no pending future will wake it: its
    step (task 2) did not add the task's _wakeup to the future the coroutine yielded."""
    pending = [o for o in gc.get_objects() if isinstance(o, Future) and not o.done()]
    woken = {
        id(getattr(callback, "__self__", None))
        for future in pending
        for callback in future._callbacks
        if getattr(callback, "__name__", "") == "_wakeup"
        and getattr(callback, "__self__", None) is not future  # a task cannot wake itself
    }
    stuck = [o for o in pending if isinstance(o, Task) and id(o) not in woken]
    return reason("s2-step.no-future-wakes", count=len(stuck)) if stuck else ""


def run(loop: EventLoop, work: Future[T] | Coroutine[T], limit: float | None = None) -> T:
    """stage2_loop.run, which says, when the loop runs dry, that no future wakes the task."""
    if limit is None:
        return run_loop(loop, work, explain=unwoken)
    return run_loop(loop, work, limit, explain=unwoken)


def frame_names(exc: BaseException) -> list[str]:
    """The function names in the traceback of `exc`, outermost first."""
    return [frame.name for frame in traceback.extract_tb(exc.__traceback__)]


def resolve_soon(value: Any) -> Future[Any]:
    """A pending future that the loop resolves with `value` on its next turn."""
    fut: Future[Any] = Future()
    get_running_loop().call_soon(fut.set_result, value)
    return fut


def fail_soon(exc: BaseException) -> Future[Any]:
    """A pending future that the loop fails with `exc` on its next turn."""
    fut: Future[Any] = Future()
    get_running_loop().call_soon(fut.set_exception, exc)
    return fut


# --- Task 1: _step sends, and settles the task --------------------------------------------------


@pytest.mark.task(taskno=1)
def test_a_coroutine_that_returns_settles_its_task_with_the_value(loop: EventLoop) -> None:
    """StopIteration carries the return value: the task resolves itself with it."""

    def answer() -> Coroutine[int]:
        yield from ()  # a generator that never pauses
        return 42

    task = Task(answer())
    assert not task.done(), reason("s2-step.creating-a-task-schedules-its")
    assert run(loop, task) == 42, reason("s2-step.the-task-should-resolve-with")


@pytest.mark.task(taskno=1)
def test_a_step_runs_the_coroutine_up_to_its_next_pause(loop: EventLoop) -> None:
    """One step sends None into a fresh coroutine and stops where it yields a pending future."""
    events: list[str] = []

    def pauses() -> Coroutine[None]:
        events.append("started")
        yield from Future()  # nobody resolves this
        events.append("resumed")

    task = Task(pauses())
    loop.run_once()
    assert events == ["started"], reason("s2-step.after-one-step-the-coroutine", events=events)
    assert not task.done(), reason("s2-step.a-task-whose-coroutine-paused")


@pytest.mark.task(taskno=1)
def test_the_task_is_the_running_one_while_its_coroutine_runs(loop: EventLoop) -> None:
    """Around send(), the task is in tasks._running, and only then: timeout() looks there."""
    seen: list[list[Task[Any]]] = []

    fut: Future[None] = Future()

    def looks() -> Coroutine[None]:
        seen.append(list(tasks._running))
        yield from fut
        seen.append(list(tasks._running))
        raise ValueError("the running task is popped on this way out too")

    task = Task(looks())
    loop.run_once()  # the first step, up to `yield from fut`
    assert seen == [[task]], reason("s2-step.seen-a-step-must-put", seen=seen)
    assert tasks._running == [], reason("s2-step.a-step-must-take-its")
    fut.set_result(None)
    try:
        task._step()  # the second step, by hand: _wakeup (task 2) is not needed for this one
    except ValueError:
        pytest.fail(reason("s2-step.the-step-let-the-coroutine"))
    assert seen == [[task], [task]], reason("s2-step.a-step-must-put-its")
    assert tasks._running == [], reason("s2-step.a-step-must-take-its-2")


@pytest.mark.task(taskno=1)
def test_a_step_that_an_interrupt_leaves_takes_its_task_out_of_running(loop: EventLoop) -> None:
    """Ctrl-C: a KeyboardInterrupt goes on out of the step, and the task leaves
    tasks._running all the same, by the step's finally."""

    def interrupted() -> Coroutine[None]:
        yield from ()
        raise KeyboardInterrupt

    Task(interrupted())
    with contextlib.suppress(KeyboardInterrupt):
        loop.run_once()
    running, tasks._running[:] = list(tasks._running), []  # no test after this one inherits it
    assert running == [], reason("s2-step.still-running-after-ctrl-c", running=running)


@pytest.mark.task(taskno=1)
def test_an_exception_settles_the_task_and_the_loop_goes_on(
    loop: EventLoop, logged: list[Record]
) -> None:
    """An exception out of the coroutine is the task's outcome, not a crash of the loop."""

    def broken() -> Coroutine[None]:
        yield from ()
        raise ValueError("bad page")

    task = Task(broken())
    with raises(ValueError, reason("s2-step.a-task-whose-coroutine-raised")):
        run(loop, task)
    assert isinstance(task.exception(), ValueError), reason("s2-step.the-task-should-hold-the")
    text = "\n".join(str(r) for r in logged if r.name == "stage2_generators.loop")
    assert "Exception in callback" not in text, reason("s2-step.the-step-let-the-error")


# --- Task 2: _wakeup, and the subscription in _step -----------------------------------------------


def resumed(loop: EventLoop, coro: Coroutine[T]) -> T:
    """Run a coroutine that waits for futures in a task; what it returned.

    Its coroutine expects only the futures' values: an exception out of it (a future still
    pending, something else than an exception thrown in) says the step resumed it too early
    or with something else than the future's outcome.
    """
    try:
        return run(loop, coro)
    except Exception as error:
        pytest.fail(reason("s2-step.resumed-wrongly", error=f"{type(error).__name__}: {error}"))


@pytest.mark.task(taskno=2)
def test_a_task_resumes_when_its_future_is_resolved(loop: EventLoop) -> None:
    """The task waits for the future its coroutine yielded, then resumes it with the value."""
    fut: Future[int] = Future()
    loop.call_later(0.01, fut.set_result, 21)

    def doubler() -> Coroutine[int]:
        value = yield from fut
        return value * 2

    outcome = resumed(loop, doubler())
    assert outcome == 42, reason("s2-step.got-not-42-resume-the", outcome=repr(outcome))


@pytest.mark.task(taskno=2)
def test_a_failed_future_wakes_its_task_with_the_exception(loop: EventLoop) -> None:
    """The future failed: _wakeup still steps the task, and the step throws the exception
    in at the `yield from`, where the coroutine may catch it (a fetch's error handling)."""
    fut: Future[int] = Future()
    loop.call_later(0.01, fut.set_exception, ConnectionResetError("reset by the test"))

    def careful() -> Coroutine[str]:
        try:
            yield from fut
        except ConnectionResetError:
            return "caught"
        return "not thrown in"

    task = Task(careful())
    turned: Future[None] = Future()  # a plain future: the loop turns a while, no task waits
    loop.call_later(0.05, turned.set_result, None)
    run(loop, turned)
    outcome = "still waiting" if not task.done() else repr(task.result())
    assert outcome == "'caught'", reason("s2-step.failed-future-never-woke", outcome=outcome)


@pytest.mark.task(taskno=2)
def test_a_cancel_reaches_a_paused_task_through_the_future_it_waits_for(loop: EventLoop) -> None:
    """The future a pause yielded is the task's _fut_waiter: cancel() cancels it, which wakes
    the task at once, rather than when the future would end on its own (never, here)."""
    fut: Future[None] = Future()

    def waiting() -> Coroutine[None]:
        yield from fut

    def main() -> Coroutine[tuple[str, bool]]:
        task = Task(waiting())
        yield from sleep(0.01)  # the task has stepped once, and paused on fut
        kept = repr(task._fut_waiter)
        task.cancel()
        return kept, fut.cancelled()

    kept, cancelled = resumed(loop, main())
    assert cancelled, reason("s2-step.waiter-not-kept", kept=kept)


@pytest.mark.task(taskno=2)
def test_the_task_waits_on_its_future_only_while_it_waits(loop: EventLoop) -> None:
    """_fut_waiter names the future yielded while the task is paused, and only then: each
    step starts by forgetting it, so cancel() never touches a future the task is done with,
    and a done task does not keep the last future it waited for alive."""
    fut: Future[str] = Future()
    states: list[str] = []

    def reader() -> Coroutine[str]:
        states.append(repr(task._fut_waiter))  # the first step
        page = yield from fut
        states.append(repr(task._fut_waiter))  # the step that fut's wake-up ran
        return page

    task = Task(reader())
    loop.call_later(0.01, fut.set_result, "page")
    resumed(loop, task)
    states.append(repr(task._fut_waiter))
    assert states == ["None"] * 3, reason("s2-step.waiter-not-forgotten", states=states)


@pytest.mark.task(taskno=2)
def test_a_wakeup_steps_the_task_in_the_turn_that_runs_it(loop: EventLoop) -> None:
    """The future's done callback is the wake-up, and it resumes the coroutine then and
    there: a wait costs the turn that runs the future's callbacks, and no other."""
    fut: Future[str] = Future()
    events: list[str] = []

    def waits() -> Coroutine[None]:
        events.append((yield from fut))

    Task(waits())
    loop.run_once()  # the first step, up to `yield from fut`
    fut.set_result("page")  # schedules the wake-up
    loop.run_once()  # runs it
    assert events == ["page"], reason("s2-step.wakeup-waits-a-turn", events=events)


@pytest.mark.task(taskno=2)
def test_the_value_travels_down_the_yield_from_chain(loop: EventLoop) -> None:
    """The innermost coroutine gets the value; each level returns it up, as calls do."""

    def inner() -> Coroutine[str]:
        first = yield from resolve_soon("chunk 1, ")
        second = yield from resolve_soon("chunk 2")
        return first + second

    def middle() -> Coroutine[str]:
        return "<" + (yield from inner()) + ">"

    def outer() -> Coroutine[str]:
        return (yield from middle()).upper()

    outcome = resumed(loop, outer())
    assert outcome == "<CHUNK 1, CHUNK 2>", reason(
        "s2-step.got-a-value-was-lost", outcome=repr(outcome)
    )


@pytest.mark.task(taskno=2)
def test_tasks_run_side_by_side_and_wait_for_each_other(loop: EventLoop) -> None:
    """A Task is a Future: `yield from task` waits for it and returns its coroutine's value."""
    order: list[str] = []

    def worker(name: str, delay: float) -> Coroutine[str]:
        yield from sleep(delay)
        order.append(name)
        return name.upper()

    def main() -> Coroutine[list[str]]:
        slow, fast = Task(worker("slow", 0.03)), Task(worker("fast", 0.01))
        return [(yield from slow), (yield from fast)]

    outcome = resumed(loop, main())
    assert outcome == ["SLOW", "FAST"], reason("s2-step.yield-from-task-gave-not", outcome=outcome)
    assert order == ["fast", "slow"], reason("s2-step.the-tasks-did-not-run")


@pytest.mark.task(taskno=2)
def test_the_chapters_bare_yield_of_a_future_receives_its_value(loop: EventLoop) -> None:
    """`value = yield future`, the chapter's first style, gets the value the task sends in."""

    def early_style() -> Coroutine[str]:
        value = yield resolve_soon("sent in")
        return value  # type: ignore[no-any-return]

    outcome = resumed(loop, early_style())
    assert outcome == "sent in", reason("s2-step.value-lost", outcome=repr(outcome))


# --- Task 3: _step throws: errors, cancellation, a bad yield, BaseExceptions, --trace ------------


@pytest.mark.task(taskno=3)
def test_an_error_is_thrown_in_at_the_paused_yield_from(loop: EventLoop) -> None:
    """A future that fails raises inside the coroutine, where try/except can catch it."""

    def careful() -> Coroutine[str]:
        try:
            yield from fail_soon(ConnectionResetError("reset by peer"))
        except ConnectionResetError as exc:
            return f"caught: {exc}"
        return "not caught"

    outcome = run(loop, careful())
    assert outcome == "caught: reset by peer", reason(
        "s2-step.the-coroutine-ended-the-future", outcome=repr(outcome)
    )


@pytest.mark.task(taskno=3)
def test_the_task_is_the_running_one_when_an_error_is_thrown_in(loop: EventLoop) -> None:
    """throw() runs the coroutine as send() does: with its task in tasks._running."""
    seen: list[list[Task[Any]]] = []

    def catches() -> Coroutine[str]:
        try:
            yield from fail_soon(ValueError("thrown in"))
        except ValueError:
            seen.append(list(tasks._running))
        return "caught"

    task = Task(catches())
    outcome = run(loop, task)
    assert outcome == "caught", reason(
        "s2-step.the-coroutine-ended-throw-the", outcome=repr(outcome)
    )
    assert seen == [[task]], reason("s2-step.while-the-error-was-thrown", seen=seen)
    assert tasks._running == [], reason("s2-step.a-step-must-take-its-3")


def fail_from_loop() -> Coroutine[None]:
    """Wait for a future that a loop callback fails: the exception arrives from outside."""
    yield from fail_soon(ValueError("set by a callback"))


def raise_after_pause() -> Coroutine[None]:
    """Pause once, then fail: the exception starts inside the coroutine."""
    yield from resolve_soon(None)
    raise ValueError("raised after a pause")


@pytest.mark.task(taskno=3)
@pytest.mark.parametrize("innermost", [fail_from_loop, raise_after_pause])
def test_stack_ripping_cured_the_traceback_has_every_coroutine(
    loop: EventLoop, innermost: Callable[[], Coroutine[None]]
) -> None:
    """The failed task's traceback runs from the outermost coroutine to the innermost."""

    def middle() -> Coroutine[None]:
        yield from innermost()

    def outer() -> Coroutine[None]:
        yield from middle()

    with raises(ValueError, reason("s2-step.the-coroutine-s-valueerror-should")) as info:
        run(loop, outer())
    wanted = ["outer", "middle", innermost.__name__]
    names = [name for name in frame_names(info.value) if name in wanted]
    assert names == wanted, reason(
        "s2-step.the-traceback-shows-not-every", names=names, wanted=wanted
    )


@pytest.mark.task(taskno=3)
def test_a_cancelled_future_cancels_the_task_waiting_for_it(loop: EventLoop) -> None:
    """CancelledError thrown in and not caught: the task ends up cancelled, not failed."""
    fut: Future[None] = Future()
    loop.call_soon(fut.cancel)
    events: list[str] = []

    def waiting() -> Coroutine[None]:
        try:
            yield from fut
        finally:
            events.append("finally")

    task = Task(waiting())
    with raises(CancelledError, reason("s2-step.a-task-whose-future-was")):
        run(loop, task)
    assert task.cancelled(), reason("s2-step.cancelled-as-exception")
    assert events == ["finally"], reason("s2-step.the-coroutine-did-its-finally", events=events)


@pytest.mark.task(taskno=3)
def test_task_cancel_lands_at_the_paused_yield_from(loop: EventLoop) -> None:
    """cancel() raises CancelledError where the coroutine waits; its finally block runs."""
    events: list[str] = []

    def stuck() -> Coroutine[None]:
        try:
            events.append("paused")
            yield from Future()  # nobody will ever resolve this
            events.append("resumed")
        finally:
            events.append("finally")

    def main() -> Coroutine[None]:
        task = Task(stuck())
        yield from sleep(0.01)
        assert task.cancel() is True, reason("s2-step.cancel-of-a-waiting-task")
        yield from task

    with raises(CancelledError, reason("s2-step.cancel-should-end-the-task")):
        run(loop, main())
    assert events == ["paused", "finally"], reason(
        "s2-step.the-coroutine-did-the-cancellederror", events=events
    )


@pytest.mark.task(taskno=3)
def test_a_coroutine_may_catch_its_cancellation(loop: EventLoop) -> None:
    """A coroutine that catches CancelledError and returns gives its task a result."""

    outcome = run(loop, cancel_one_that_catches_it())
    assert outcome == ("cleaned up", False), reason(
        "s2-step.got-a-coroutine-that-catches", outcome=outcome
    )


@pytest.mark.task(taskno=3)
def test_a_cancelled_task_may_wait_while_it_cleans_up(loop: EventLoop) -> None:
    """One cancel() is one CancelledError: once thrown in, the request is used up."""

    def tidy() -> Coroutine[str]:
        try:
            yield from sleep(10)
        except CancelledError:
            yield from sleep(0)  # a wait while cleaning up: closing a connection, say
            return "cleaned up"
        return "slept"

    def main() -> Coroutine[str]:
        task = Task(tidy())
        yield from sleep(0)
        task.cancel()
        try:
            return (yield from task)
        except CancelledError:
            return "cancelled again"

    outcome = run(loop, main())
    assert outcome == "cleaned up", reason("s2-step.cancelled-again", outcome=repr(outcome))


@pytest.mark.task(taskno=3)
def test_a_task_cancelled_before_its_first_step_never_runs(loop: EventLoop) -> None:
    """cancel() before the first step: that step throws at once, and the body never runs."""
    events: list[str] = []

    def never() -> Coroutine[None]:
        events.append("ran")
        yield from sleep(0)

    task = Task(never())
    task.cancel()
    with raises(CancelledError, reason("s2-step.a-task-cancelled-before-its")):
        try:
            run(loop, task)
        except Exception as error:  # the step resumed the coroutine some other way
            pytest.fail(
                reason("s2-step.cancel-not-thrown", error=f"{type(error).__name__}: {error}")
            )
    assert task.cancelled(), reason("s2-step.the-task-was-failed-not")
    assert events == [], reason("s2-step.the-coroutine-ran-although-its")


@pytest.mark.task(taskno=3)
def test_yielding_a_non_future_fails_the_task_at_the_bad_yield(loop: EventLoop) -> None:
    """A bare `yield 42` where `yield from` was meant: RuntimeError, raised at that line."""

    def buggy() -> Coroutine[None]:
        yield 42  # type: ignore[misc]

    def fine() -> Coroutine[str]:
        yield from sleep(0.01)
        return "still running"

    bad, good = Task(buggy()), Task(fine())
    assert run(loop, good) == "still running", reason("s2-step.one-bad-task-stopped-the")
    assert bad.done(), reason("s2-step.the-task-that-yielded-42")
    error = bad.exception()
    assert isinstance(error, RuntimeError), reason(
        "s2-step.a-bad-yield-should-fail", error=repr(error)
    )
    assert "buggy" in frame_names(error), reason("s2-step.the-error-is-not-raised")


@pytest.mark.task(taskno=3)
def test_the_bad_yield_is_refused_at_a_step_of_its_own(loop: EventLoop) -> None:
    """The RuntimeError for a bad yield is thrown in at a step that call_soon schedules, not
    nested in the step that saw the yield: what the loop had queued first runs first, and a
    coroutine that catches the error and yields wrongly again waits a turn each time."""
    events: list[str] = []

    def retries() -> Coroutine[str]:
        for _ in range(2):
            get_running_loop().call_soon(events.append, "queued")
            try:
                yield 42  # type: ignore[misc]
            except RuntimeError:
                events.append("refused")
        return "gave up"

    run(loop, retries())
    expected = ["queued", "refused"] * 2
    assert events == expected, reason("s2-step.refused-nested", events=events, expected=expected)


@pytest.mark.task(taskno=3)
def test_keyboard_interrupt_settles_the_task_and_stops_the_loop(loop: EventLoop) -> None:
    """Not an Exception: the task records it, and it goes on out of the loop."""

    def interrupted() -> Coroutine[None]:
        yield from resolve_soon(None)
        raise KeyboardInterrupt

    task = Task(interrupted())
    # The loop waits on another task: only the interrupt, out of the step, can end it early
    # (waiting on the task itself, its result() would raise what the task stored).
    with raises(KeyboardInterrupt, reason("s2-step.keyboardinterrupt-should-go-on-out")):
        run(loop, sleep(0.5))
    assert task.done(), reason("s2-step.the-task-was-left-half")
    assert isinstance(task.exception(), KeyboardInterrupt), reason(
        "s2-step.the-task-should-hold-the-2"
    )
    running, tasks._running[:] = list(tasks._running), []  # no test after this one inherits it
    assert running == [], reason("s2-step.still-running-after-ctrl-c", running=running)


class Listener(Observer):
    """Someone watching the crawl (as --trace does): keeps each resumption it is told of."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def resume(self, task: Any, value: Any) -> None:
        self.calls.append((task.name, value))


@pytest.mark.task(taskno=3)
def test_an_observer_hears_each_resumption_with_its_value_or_error() -> None:
    """With --trace, every step tells the loop's observer which task resumes, and with what."""

    def reader() -> Coroutine[str]:
        value = yield from resolve_soon(42)
        with contextlib.suppress(ValueError):
            yield from fail_soon(ValueError("bad"))
        return f"read {value}"

    listener = Listener()
    loop = EventLoop(listener)
    try:
        outcome = run(loop, Task(reader(), name="reader"))
        assert outcome == "read 42", reason(
            "s2-step.the-traced-coroutine-ended", outcome=repr(outcome)
        )
    finally:
        loop.close()
    calls = listener.calls
    assert [who for who, _ in calls] == ["reader"] * 3, reason(
        "s2-step.the-observer-heard-one-per", calls=calls
    )
    assert calls[0][1] is None and calls[1][1] == 42, reason(
        "s2-step.the-observer-heard-values-sent", calls=calls
    )
    assert isinstance(calls[2][1], ValueError), reason(
        "s2-step.the-observer-heard-the-error", calls=calls
    )


@pytest.mark.task(taskno=3)
def test_an_observer_hears_a_cancel_as_the_error_thrown_in() -> None:
    """A pending cancel becomes the CancelledError of the step, and the observer is told so."""
    listener = Listener()
    loop = EventLoop(listener)

    def waiter() -> Coroutine[None]:
        yield from Future()  # nobody resolves it: only a cancel ends the wait

    try:
        task = Task(waiter(), name="waiter")
        loop.call_later(0.01, task.cancel)
        with raises(CancelledError, reason("s2-step.the-cancelled-task-should-end")):
            run(loop, task)
    finally:
        loop.close()
    calls = listener.calls
    assert [who for who, _ in calls] == ["waiter"] * 2, reason(
        "s2-step.the-observer-heard-two-steps", calls=calls
    )
    assert isinstance(calls[1][1], CancelledError), reason(
        "s2-step.the-observer-heard-the-second", calls=calls
    )


@pytest.mark.task(taskno=3)
def test_an_observer_hears_a_cancel_before_the_first_step_as_the_error() -> None:
    """The step turns a pending cancel into its CancelledError first, then tells the observer:
    so too at the first step, where no cancelled future brought the error."""
    listener = Listener()
    loop = EventLoop(listener)

    def never() -> Coroutine[None]:
        yield from sleep(0)

    try:
        task = Task(never(), name="early")
        task.cancel()
        with contextlib.suppress(CancelledError):
            run(loop, task)
    finally:
        loop.close()
    calls = listener.calls
    assert len(calls) == 1 and isinstance(calls[0][1], CancelledError), reason(
        "s2-step.observer-heard-no-cancel", calls=calls
    )
