"""The stage 2 exercises' common harness: a fresh loop per test, driven for a bounded time.

Listed as ``support`` in each stage 2 exercise, so a workspace has it beside the tests.
A student's loop, Task or Future that loses a wake-up must fail a test, not hang it:
:func:`run` gives up after a limit, and names the first exception a callback let out
to the loop, which logs it and goes on (most often, that is the cause).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from reasons import reason

from shared import log
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task, sleep

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)
LIMIT_S = 5.0  # far above what any test of a framework piece needs
LOOP_LOGGER = "stage2_generators.loop"  # the name the loop logs under (its module's)


@pytest.fixture(name="loop")
def loop_fixture() -> Iterator[EventLoop]:
    """A fresh event loop (it makes itself the current one), closed after the test.

    The tasks a failed test left unfinished are collected here, at a quiet moment.
    Collected later, their clean-up could run in the middle of pytest's report of
    another test, which CPython 3.11's ast module does not survive.
    """
    event_loop = EventLoop()
    yield event_loop
    event_loop.close()
    gc.collect()


class LoopErrors:
    """Collects what the loop logs while attached: exceptions that escaped its callbacks.

    Attached as the handler of the crawler's messages (shared/log.py), it sees each record
    first and hands it on to the handler it replaced, so every message is still printed.
    """

    def __init__(self) -> None:
        """Start with no errors, and remember the handler to hand records on to."""
        self.errors: list[BaseException] = []
        self.handed_on = log.handler

    def __call__(self, record: log.Record) -> None:
        """Keep the exception of an error the loop logged; hand the record on."""
        if record.name == LOOP_LOGGER and record.level >= log.ERROR and record.exc is not None:
            self.errors.append(record.exc)
        self.handed_on(record)

    def first(self) -> str:
        """The first exception, as a cause of the failure ("" if there is none)."""
        if not self.errors:
            return ""
        error = self.errors[0]
        return reason("loop.callback-raised", error=f"{type(error).__name__}: {error}")


def causes(*known: str) -> str:
    """What is known of why the work never ended, one clause after another ("" if nothing)."""
    return "; ".join(clause for clause in known if clause)


def run(
    loop: EventLoop,
    work: Future[T] | Coroutine[T],
    limit: float = LIMIT_S,
    explain: Callable[[], str] = lambda: "",
) -> T:
    """Drive the loop until `work` is done and return its result, as run_until_complete does.

    Unlike run_until_complete, give up after `limit` seconds (a timer at the deadline keeps
    select() from sleeping past it), and fail the test when nothing is left that could ever
    finish `work` (the loop's own "deadlock" RuntimeError). The failure message starts with
    the first exception that a callback let out to the loop, which logs it and goes on:
    most often, that is the cause, and `explain()` may add what else it knows.
    """
    future = work if isinstance(work, Future) else Task(work)
    deadline = time.monotonic() + limit
    errors = LoopErrors()
    log.handler = errors
    try:
        while not future.done():
            left = deadline - time.monotonic()
            if left <= 0:
                cause = causes(explain(), errors.first())
                late = "loop.late" if cause else "loop.late-alone"
                pytest.fail(reason(late, cause=cause, limit=limit))
            timers = any(not handle._cancelled for _, _, handle in loop._scheduled)
            busy = timers or loop._selector.get_map()
            watchdog = loop.call_later(left, lambda: None) if busy else None
            try:
                loop.run_once()
            except RuntimeError as exc:
                if "deadlock" not in str(exc):
                    raise
                cause = causes(explain(), errors.first())
                stuck = "loop.stuck" if cause else "loop.stuck-alone"
                pytest.fail(reason(stuck, cause=cause, why=exc))
            finally:
                if watchdog is not None:
                    watchdog.cancel()
    finally:
        log.handler = errors.handed_on
    return future.result()


@contextlib.contextmanager
def raises(kind: type[E], why: str) -> Iterator[pytest.ExceptionInfo[E]]:
    """pytest.raises, but when nothing is raised the test fails with ``why``, a sentence.

    pytest's own words, "DID NOT RAISE CancelledError", tell a student nothing.
    """
    try:
        with pytest.raises(kind) as info:
            yield info
    except pytest.fail.Exception as failed:
        if "DID NOT RAISE" not in str(failed):
            raise
        pytest.fail(reason("loop.nothing-raised", why=why, kind=kind.__name__), pytrace=False)


def cancel_one_that_catches_it() -> Coroutine[tuple[str, bool]]:
    """Cancel a task whose coroutine catches the CancelledError and returns "cleaned up".

    Returns the task's result and whether it counts as cancelled.  A coroutine may catch
    its cancellation: its task then ends with that result, not cancelled (as in asyncio).
    Two exercises judge this, the Task's step (s2-step) and cancel() (s2-timeout).
    """

    def stubborn() -> Coroutine[str]:
        try:
            yield from sleep(10)
        except CancelledError:
            return "cleaned up"
        return "slept"

    task = Task(stubborn())
    yield from sleep(0)
    task.cancel()
    return (yield from task), task.cancelled()
