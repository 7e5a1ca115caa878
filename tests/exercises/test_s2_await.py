"""Exercise s2-await: `await` on our own loop, with an `async def` copy of stage 2's crawler.

Task 1 is `Future.__await__`, task 2 and task 3 are `Task._step` (see
shared/tools/exercises/s2-await/README.md): task 2 drives an `async def` coroutine, task 3
cancels one and refuses what is not our Future, and runs the `async def` crawler of
stage2_await.py on stage 2's loop to the oracle's pages. Each test drives a fresh stage 2
EventLoop for a limited time, so a lost wake-up fails a test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import traceback
from typing import Any

import pytest
from reasons import reason
from stage2_await import AsyncCrawler, wait
from stage2_loop import loop_fixture, raises, run  # noqa: F401 (the fixture `loop`)

from shared import observe
from shared.crawling import Options
from shared.log import Record
from shared.observe import Observer
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle
from shared.tools.instruments import watching
from shared.tools.instruments.trace import Tracer
from stage2_generators import tasks
from stage2_generators.events import get_running_loop
from stage2_generators.futures import CancelledError, Future
from stage2_generators.loop import EventLoop
from stage2_generators.queues import Queue
from stage2_generators.tasks import Task, sleep, timeout

CRAWL_LIMIT_S = 30.0  # the default site takes one or two seconds


async def waiter(fut: Future[Any]) -> Any:
    """The smallest `async def` that waits for a future."""
    return await fut


def resume(coro: Any, value: Any = None, expected: tuple[type[Exception], ...] = ()) -> Any:
    """coro.send(value), by hand: what the coroutine yields, or StopIteration, or ``expected``.

    Anything else came out of `await` itself (a TypeError when __await__ gives no
    iterator): the test fails with a sentence that says what __await__ must give.
    """
    try:
        return coro.send(value)
    except StopIteration:
        raise
    except Exception as error:
        if isinstance(error, expected):
            raise
        coro.close()
        pytest.fail(reason("s2-await.await-raised", error=f"{type(error).__name__}: {error}"))


def finish(coro: Any, value: Any = None) -> Any:
    """Resume a coroutine by hand; return what it returned (it must return, not pause)."""
    with pytest.raises(StopIteration) as stop:
        resume(coro, value)
    return stop.value.value


# --- Task 1: Future.__await__ ------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_await_pauses_at_a_pending_future_and_returns_its_result(loop: EventLoop) -> None:
    """`await fut` hands the future itself up to whoever drives the coroutine, then its result."""
    fut: Future[int] = Future()
    coro = waiter(fut)
    try:
        yielded = resume(coro)
    except StopIteration:
        pytest.fail(reason("s2-await.await-must-pause-at-a-2"))
    assert yielded is fut, reason("s2-await.await-must-pause-at-a", yielded=repr(yielded))
    fut.set_result(42)
    assert finish(coro) == 42, reason("s2-await.after-the-pause-await-returns")


@pytest.mark.task(taskno=1)
def test_await_does_not_pause_at_a_done_future(loop: EventLoop) -> None:
    """A future that is done already gives its result at once (footnote 12, as yield from)."""
    fut: Future[str] = Future()
    fut.set_result("ready")
    coro = waiter(fut)
    try:
        value = finish(coro)
    except pytest.fail.Exception:
        coro.close()
        pytest.fail(reason("s2-await.paused"))
    assert value == "ready", reason("s2-await.await-on-a-done-future", value=repr(value))


@pytest.mark.task(taskno=1)
def test_await_raises_the_futures_exception_at_the_await(loop: EventLoop) -> None:
    """A failed future raises its exception where the coroutine awaits it."""
    fut: Future[int] = Future()
    fut.set_exception(ValueError("bad page"))
    with raises(ValueError, reason("s2-await.no-exception-at-the-await")):
        try:
            resume(waiter(fut), expected=(ValueError,))
        except StopIteration as stop:  # the await returned: say what it gave
            pytest.fail(reason("s2-await.failed-future-returned", value=repr(stop.value)))


@pytest.mark.task(taskno=1)
def test_await_runs_the_same_generator_as_yield_from(loop: EventLoop) -> None:
    """`await fut` is `yield from fut` under a new name: __await__ gives Future.__iter__'s."""
    fut: Future[int] = Future()
    it = fut.__await__()
    code = getattr(it, "gi_code", None)
    assert code is Future.__iter__.__code__, reason("s2-await.await-must-give-the-generator")


# --- Task 2: Task._step drives an async def ----------------------------------------------------


@pytest.mark.task(taskno=2)
def test_a_task_runs_an_async_def_to_its_return_value(loop: EventLoop) -> None:
    """A Task sends each awaited future's value in, and resolves itself with the return."""
    first: Future[int] = Future()
    second: Future[int] = Future()

    async def add() -> int:
        return await first + await second

    loop.call_later(0.01, first.set_result, 2)
    loop.call_later(0.02, second.set_result, 3)
    task = Task(add())
    assert task.name == "add", reason("s2-await.a-task-takes-its-coroutine")
    total = run(loop, task)
    assert total == 5, reason("s2-await.the-task-must-return-what", total=repr(total))

    async def no_return() -> None:
        await first  # done already: the body ends with no return statement

    silent = Task(no_return())
    turned: Future[None] = Future()  # a plain future, not a task: the loop turns a while
    loop.call_later(0.01, turned.set_result, None)
    run(loop, turned)
    assert silent.done() and silent.exception() is None and silent.result() is None, reason(
        "s2-await.a-body-with-no-return-resolves-to-none",
        state="pending" if not silent.done() else f"failed with {silent.exception()!r}",
    )


@pytest.mark.task(taskno=2)
def test_an_async_def_awaits_a_task_and_stage_2s_generators(loop: EventLoop) -> None:
    """A Task is a Future, so awaitable; a generator coroutine is awaited through wait()."""
    q: Queue[str] = Queue()

    async def producer() -> str:
        await wait(sleep(0.01))
        q.put_nowait("page")
        return "produced"

    async def consumer() -> tuple[str, str]:
        child = Task(producer())
        item = await wait(q.get())
        return item, await child

    got = run(loop, consumer())
    assert got == ("page", "produced"), reason("s2-await.await-wait-q-get-then", got=repr(got))


@pytest.mark.task(taskno=2)
def test_a_failed_future_raises_at_the_await_inside_the_task(loop: EventLoop) -> None:
    """The Task throws a failed future's exception in: an `except` at the await catches it."""
    fut: Future[int] = Future()
    loop.call_later(0.01, fut.set_exception, ConnectionResetError("reset"))

    async def careful() -> str:
        try:
            await fut
        except ConnectionResetError as exc:
            return f"caught {exc}"
        return "not caught"

    assert run(loop, careful()) == "caught reset", reason("s2-await.the-exception-must-land-at")


@pytest.mark.task(taskno=2)
def test_an_exception_leaving_the_async_def_fails_its_task(
    loop: EventLoop, logged: list[Record]
) -> None:
    """The task is settled with what its coroutine raised, and its traceback shows the line;
    the exception stays in the task: the loop hears nothing of it."""

    async def broken() -> None:
        await wait(sleep(0.01))
        raise KeyError("no such page")

    task = Task(broken())
    with pytest.raises(KeyError):
        run(loop, task)
    error = task.exception()
    assert isinstance(error, KeyError), reason(
        "s2-await.the-task-must-fail-with", error=repr(error)
    )
    names = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert "broken" in names, reason("s2-await.the-traceback-must-show-the", names=names)
    text = "\n".join(str(r) for r in logged if r.name == "stage2_generators.loop")
    assert "Exception in callback" not in text, reason("s2-await.the-step-let-the-error")


@pytest.mark.task(taskno=2)
@pytest.mark.parametrize("ending", ["return", "KeyError", "KeyboardInterrupt"])
def test_a_step_takes_its_task_out_of_running_however_it_ends(loop: EventLoop, ending: str) -> None:
    """The last step of a task ends in a return or an error, not a pause: the task leaves
    tasks._running all the same (timeout() takes the running task from there), even when
    the error goes on out of the step and the loop, as Ctrl-C does."""

    async def ends() -> str:
        await wait(sleep(0.01))
        if ending == "KeyError":
            raise KeyError("no such page")
        if ending == "KeyboardInterrupt":
            raise KeyboardInterrupt
        return "done"

    task = Task(ends())
    with contextlib.suppress(KeyError, KeyboardInterrupt):
        run(loop, task)
    left, tasks._running[:] = list(tasks._running), []  # no test after this one inherits it
    assert left == [], reason("s2-await.running-left", ending=ending, left=left)


@pytest.mark.task(taskno=2)
def test_the_task_waits_on_its_future_only_while_it_waits(loop: EventLoop) -> None:
    """_fut_waiter names the future awaited while the task is paused, and only then: each
    step starts by forgetting it, so cancel() never touches a future the task is done with,
    and a done task does not keep the last future it awaited alive."""
    fut: Future[str] = Future()
    states: list[str] = []

    async def reader() -> str:
        states.append(repr(task._fut_waiter))  # the first step
        page = await fut
        states.append(repr(task._fut_waiter))  # the step that fut's wake-up ran
        return page

    task = Task(reader())
    loop.call_later(0.01, fut.set_result, "page")
    run(loop, task)
    states.append(repr(task._fut_waiter))
    assert states == ["None"] * 3, reason("s2-await.waiter-not-forgotten", states=states)


class Listener(Observer):
    """Someone watching (as --trace does): keeps what each step resumes its task with."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def resume(self, task: Any, value: Any) -> None:
        self.values.append(value)


@pytest.mark.task(taskno=2)
def test_a_step_given_an_exception_throws_it_in(loop: EventLoop) -> None:
    """_step(exc) resumes the coroutine with throw(exc), not send: the exception lands at
    the await, even one whose future is still pending (a cancel, a refused yield)."""
    pending: Future[int] = Future()

    async def waiting() -> str:
        try:
            await pending
        except ConnectionResetError:
            return "thrown in"
        return "resumed with a value"

    task = Task(waiting())
    loop.call_later(0.01, task._step, ConnectionResetError("thrown by the test"))
    turned: Future[None] = Future()  # a plain future: the loop turns a while
    loop.call_later(0.05, turned.set_result, None)
    run(loop, turned)
    outcome = "still pending" if not task.done() else repr(task.exception() or task.result())
    assert outcome == "'thrown in'", reason("s2-await.step-must-throw", outcome=outcome)


@pytest.mark.task(taskno=2)
def test_an_observer_hears_each_step_with_the_value_sent() -> None:
    """With --trace, each step tells the loop's observer what it resumes the async def with."""

    error = ConnectionResetError("reset by the test")

    async def reader() -> str:
        failing: Future[int] = Future()
        get_running_loop().call_soon(failing.set_exception, error)
        with contextlib.suppress(ConnectionResetError):
            await failing  # resumed by a throw: the observer hears the exception
        fut: Future[int] = Future()
        get_running_loop().call_soon(fut.set_result, 42)
        return f"read {await fut}"

    listener = Listener()
    loop = EventLoop(listener)
    try:
        assert run(loop, Task(reader())) == "read 42", reason("s2-await.the-async-def-should-read")
    finally:
        loop.close()
    assert listener.values == [None, error, 42], reason(
        "s2-await.the-observer-heard-the-values", value1=listener.values
    )


# --- Task 3: cancelled, refused, and a whole crawl -----------------------------------------------


@pytest.mark.task(taskno=3)
def test_a_keyboard_interrupt_leaving_an_async_def_stops_the_loop(loop: EventLoop) -> None:
    """Not an Exception: the task records it, and it goes on out of the step and the loop."""

    async def interrupted() -> None:
        await wait(sleep(0.01))
        raise KeyboardInterrupt

    task = Task(interrupted())
    with raises(KeyboardInterrupt, reason("s2-await.a-keyboardinterrupt-should-go-on")):
        run(loop, sleep(0.5))  # another task's wait: only the interrupt can end it early
    if not task.done():
        held = "nothing (the task is still pending)"
    else:
        held = "a cancellation" if task.cancelled() else repr(task.exception())
    assert held.startswith("KeyboardInterrupt"), reason(
        "s2-await.the-task-should-hold-the", held=held
    )
    running, tasks._running[:] = list(tasks._running), []  # no test after this one inherits it
    assert running == [], reason("s2-await.still-running-after-ctrl-c", running=running)


@pytest.mark.task(taskno=3)
def test_cancel_lands_at_the_await_and_the_task_is_cancelled(loop: EventLoop) -> None:
    """cancel() throws CancelledError in at the await; the task counts as cancelled."""
    cleaned: list[str] = []

    async def forever() -> None:
        try:
            await Future()
        finally:
            cleaned.append("finally ran")

    task = Task(forever())
    loop.call_later(0.01, task.cancel)
    unsettled = reason("s2-await.cancelled-task-unsettled")
    with raises(CancelledError, reason("s2-await.cancel-became-a-result")):
        run(loop, task, explain=lambda: unsettled if cleaned else "")
    assert cleaned == ["finally ran"], reason("s2-await.cancel-must-land-at-the")
    assert task.cancelled(), reason("s2-await.cancelled-not-failed")
    left, tasks._running[:] = list(tasks._running), []  # no test after this one inherits it
    assert left == [], reason("s2-await.running-left", ending="CancelledError", left=left)


@pytest.mark.task(taskno=3)
def test_timeout_works_around_an_await(loop: EventLoop) -> None:
    """stage 2's timeout() cancels the task running an async def, and says TimeoutError."""

    async def slow() -> str:
        try:
            with timeout(0.02):
                await Future()
        except TimeoutError:
            return "timed out"
        return "never"

    said = run(loop, slow())
    assert said == "timed out", reason("s2-await.timeout-must-end-the-await", said=repr(said))


@pytest.mark.task(taskno=3)
def test_awaiting_asyncios_sleep_is_refused_with_what_was_yielded(loop: EventLoop) -> None:
    """asyncio.sleep(0) yields a bare None: our Task throws it back in, naming it."""

    async def foreign() -> None:
        await asyncio.sleep(0)

    task = Task(foreign())
    try:
        run(loop, task)
    except pytest.fail.Exception:  # the loop ran dry, or out of time, and the task still waits
        if task.done():
            raise
        pytest.fail(reason("s2-await.bad-yield-not-thrown-in"))
    except RuntimeError as error:
        assert str(error) == "a task may only yield Futures, not None", reason(
            "s2-await.the-task-must-refuse-what", error=error
        )
    else:
        pytest.fail(reason("s2-await.thrown-in"))
    names = [frame.name for frame in traceback.extract_tb(task.exception().__traceback__)]
    assert "foreign" in names and "sleep" in names, reason(
        "s2-await.the-error-lands-at-the", names=names
    )


@pytest.mark.task(taskno=3)
def test_the_refusal_comes_at_a_step_of_its_own(loop: EventLoop) -> None:
    """The RuntimeError for a foreign yield is thrown in at a step that call_soon schedules,
    not nested in the step that saw the yield: what the loop had queued first runs first,
    and a coroutine that catches the refusal and tries again waits a turn each time."""
    events: list[str] = []

    async def retries() -> str:
        for _ in range(2):
            get_running_loop().call_soon(events.append, "queued")
            try:
                await asyncio.sleep(0)
            except RuntimeError:
                events.append("refused")
        return "gave up"

    run(loop, retries())
    expected = ["queued", "refused"] * 2
    assert events == expected, reason("s2-await.refused-nested", events=events, expected=expected)


@pytest.mark.task(taskno=3)
def test_a_cancelled_task_may_await_while_it_cleans_up(loop: EventLoop) -> None:
    """One cancel() is one CancelledError: once thrown in, the request is used up, and the
    coroutine that caught it may await again (closing a connection, say)."""

    async def tidy() -> str:
        try:
            await Future()  # nobody resolves it: only the cancel ends the wait
        except CancelledError:
            await wait(sleep(0))
            return "cleaned up"
        return "never"

    task = Task(tidy())
    loop.call_later(0.01, task.cancel)
    try:
        outcome = run(loop, task)
    except CancelledError:
        outcome = "cancelled again"
    assert outcome == "cleaned up", reason("s2-await.cancelled-again", outcome=repr(outcome))


@pytest.mark.task(taskno=3)
def test_a_task_cancelled_before_its_first_step_throws_at_that_step() -> None:
    """The first step turns the pending cancel into the CancelledError it throws in, and
    the observer hears that error: the body never runs."""
    listener = Listener()
    events: list[str] = []

    async def never() -> None:
        events.append("ran")
        await wait(sleep(0))

    loop = EventLoop(listener)
    try:
        task = Task(never())
        task.cancel()
        with contextlib.suppress(CancelledError):
            run(loop, task)
    finally:
        loop.close()
    assert events == [], reason("s2-await.ran-although-cancelled", events=events)
    assert task.cancelled(), reason("s2-await.cancelled-not-failed")
    heard = listener.values
    assert len(heard) == 1 and isinstance(heard[0], CancelledError), reason(
        "s2-await.observer-heard-no-cancel", values=heard
    )


@pytest.mark.task(taskno=3)
def test_the_async_crawler_finds_the_oracles_pages(
    loop: EventLoop, default_site: tuple[Site, str]
) -> None:
    """The `async def` crawler on our loop: every URL and record as the oracle says."""
    site, base_url = default_site
    crawler = AsyncCrawler([base_url])
    run(loop, crawler.crawl(), limit=CRAWL_LIMIT_S)  # type: ignore[arg-type]
    assert_matches_oracle(crawler.result(), site.expected(base_url))


@pytest.mark.task(taskno=3)
def test_the_async_crawler_fetches_side_by_side(loop: EventLoop) -> None:
    """Four `async def` workers keep four fetches in flight, as the server sees it."""
    site = Site(pages=40, traps=False, latency=0.05)
    with serve(site) as base_url:
        crawler = AsyncCrawler([base_url], Options(max_tasks=4))
        run(loop, crawler.crawl(), limit=CRAWL_LIMIT_S)  # type: ignore[arg-type]
        assert site.max_in_flight == 4, reason(
            "s2-await.fetches-at-once-not-4", value0=site.max_in_flight
        )
    assert_matches_oracle(crawler.result(), site.expected(base_url))


@pytest.mark.task(taskno=3)
def test_the_trace_follows_each_step_down_the_chain_of_awaits(loop: EventLoop) -> None:
    """With someone watching (--trace), each step names the chain it resumes, as stage 2's."""
    site = Site(pages=3, traps=False)
    out = io.StringIO()
    with serve(site) as base_url, watching(Tracer(out)):  # what --trace does
        crawler = AsyncCrawler([base_url], Options(max_tasks=2, ignore_robots=True))
        loop.observer = observe.observer  # what a loop made in the block would take
        run(loop, crawler.crawl(), limit=CRAWL_LIMIT_S)  # type: ignore[arg-type]
    assert_matches_oracle(crawler.result(), site.expected(base_url, ignore_robots=True))
    chains = [line.split()[2] for line in out.getvalue().splitlines() if len(line.split()) > 2]
    reading = "work>fetch>request>wait>sock_recv>_when_ready"
    assert reading in chains, reason(
        "s2-await.no-step-resumed-the-steps", reading=reading, value3=sorted(set(chains))
    )
