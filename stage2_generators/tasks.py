"""Stage 2 tasks ("Building Coroutines With Generators"): no more state saved by hand.

A Task resumes a generator's frame at each `yield from`: the frame holds what a Fetcher held.
"""

from typing import Any

from .events import get_running_loop
from .futures import CancelledError, Coroutine, Future, T, wake_all


class Task(Future[T]):
    """A coroutine wrapped in a Future."""

    # "Coordinating Coroutines": a task resolves itself with its coroutine's return value or
    # exception, so other coroutines can `yield from task` and run_until_complete can wait.

    def __init__(self, coro: Coroutine[T], name: str | None = None) -> None:
        super().__init__()
        self._coro = coro
        # asyncio names a task it is given no name for Task-1, Task-2 ... and keeps it in _name
        # (get_name()); ours takes the name of its coroutine (a test's `main`, say): a task is
        # known by what it runs.
        self.name = name or str(getattr(coro, "__name__", "task"))
        # The future the coroutine is paused on, so that cancel() can cancel it too. It is
        # None only while a step is scheduled or running.
        self._fut_waiter: Future[Any] | None = None
        # A cancel() waiting for the next step to throw it in, and how many cancel() calls are
        # not taken back (cancelling()): a timeout takes back its timer's with uncancel(), so
        # one left over means the task is cancelled from outside.
        self._must_cancel, self._num_cancels_requested = False, 0
        # The first step is scheduled, not run here: creating a task never runs its code
        # in the middle of the caller's code.
        get_running_loop().call_soon(self._step)

    def cancel(self) -> bool:
        """Raise CancelledError at the coroutine's paused `yield from`; False if already done."""
        # The coroutine may catch CancelledError to clean up (a finally block runs); the task
        # counts as cancelled once the error propagates out of it.
        if self.done():
            return False
        # The chapter's cancel() throws CancelledError in at once. We note the request instead
        # and wake the task by cancelling the future it waits for; its next step throws the
        # error. So the coroutine's cleanup runs from the loop like any other step, not nested
        # inside whoever called cancel(), and no stale wake-up arrives after it.
        self._num_cancels_requested += 1  # each call counts, even one before the last has landed
        self._must_cancel = True
        if self._fut_waiter is not None:
            self._fut_waiter.cancel()
        return True

    def cancelling(self) -> int:
        """Return how many cancel() requests are pending: not taken back by uncancel()."""
        return self._num_cancels_requested

    def uncancel(self) -> int:
        """Take back one cancel() request, as a timeout does its own; return how many are left."""
        self._num_cancels_requested -= 1
        return self._num_cancels_requested

    # asyncio's Task spells _step and _wakeup with two underscores (__step, __wakeup), which
    # Python mangles to _Task__step; one keeps them plain to read, and to test.
    def _step(self, exc: BaseException | None = None, value: Any = None) -> None:
        # Run the coroutine until its next pause. The paused generator frame *is* the
        # continuation: stage 1 had to spell it out as the next callback, while here send()
        # or throw() simply resumes the frame.
        self._fut_waiter = None
        if self._must_cancel:
            exc, self._must_cancel = CancelledError(), False
        if observer := get_running_loop().observer:  # it hears each resume before it runs
            observer.resume(self, value if exc is None else exc)
        # throw() is the cure for stack ripping: the exception appears inside the coroutine at
        # the very `yield from` that waited. A try/except there catches it, and if nothing
        # does, its traceback lists every coroutine frame, not just the loop's.
        _running.append(self)  # meanwhile this is the running task, for timeout()
        try:
            yielded = self._coro.send(value) if exc is None else self._coro.throw(exc)
        except StopIteration as stop:
            self.set_result(stop.value)  # the task resolves itself with the return value
        except CancelledError:
            super().cancel()
        except BaseException as error:  # whatever it is, the task is settled: never left in limbo
            self.set_exception(error)
            if not isinstance(error, Exception):
                raise  # KeyboardInterrupt and SystemExit go on to stop the loop, as in CPython
        else:
            # Thanks to `yield from` delegation, `yielded` is the future that the innermost
            # sub-coroutine is waiting for: every `yield from` in between passed it up unchanged,
            # and will pass the outcome down again when we resume the outermost frame.
            if isinstance(yielded, Future):
                # If cancel() was called while the coroutine ran (a task cancelling itself), the
                # next step still throws CancelledError; CPython also cancels `yielded` at once.
                self._fut_waiter = yielded
                yielded.add_done_callback(self._wakeup)
            else:
                # A bare `yield` where `yield from` was meant. Throwing the error in, at the
                # next step, puts the offending line in the traceback.
                bad_yield = RuntimeError(f"a task may only yield Futures, not {yielded!r}")
                get_running_loop().call_soon(self._step, bad_yield)
        finally:
            _running.pop()

    def _wakeup(self, awaited: Future[Any]) -> None:
        # Done callback of the awaited future: resume the coroutine with its outcome. The
        # value is sent so that the chapter's early style, `chunk = yield future`, also works;
        # with `yield from future`, Future.__iter__ reads the result itself.
        exc = CancelledError() if awaited.cancelled() else awaited.exception()
        self._step(exc, awaited._result)  # the value only matters when exc is None


# sleep() and timeout() are the timers asyncio keeps beside its Task, in tasks.py and timeouts.py.
def sleep(delay: float) -> Coroutine[None]:
    """Pause the calling coroutine for `delay` seconds while others run."""
    fut: Future[None] = Future()
    handle = get_running_loop().call_later(delay, wake_all, [fut])  # the timer wakes the sleeper
    try:
        yield from fut  # suspends: waits for the timer
    finally:
        handle.cancel()  # on cancel, do not leave the timer behind


# asyncio keeps the task whose step is running in a dict, one per loop (_current_tasks, read
# by asyncio.current_task()). We have one loop, so a module global will do: Task._step pushes
# its task before send() or throw() and pops it after, so that code anywhere down the
# `yield from` chain can find the task that runs it. Steps never nest: one task or none.
_running: list[Task[Any]] = []


class timeout:  # lower case, as contextlib.suppress: a class used like a function
    """Cancel the running task if the with block takes over `delay` s, and raise TimeoutError."""

    # asyncio.timeout() of Python 3.11, for `with` and generators. No second Task runs the
    # work: the block runs in the task that entered it, the timer cancels that task, and the
    # CancelledError lands at the block's paused `yield from`, whose `with` and `finally`
    # blocks (a socket unregistered and closed) run before TimeoutError leaves the block.
    # A class, not a @contextmanager generator: one small object per fetch in flight.
    __slots__ = ("cancels", "delay", "fired", "task", "timer")

    def __init__(self, delay: float) -> None:
        self.delay, self.fired = delay, False

    def __enter__(self) -> None:
        if not _running:  # only a Task can be cancelled when time is up
            raise RuntimeError("timeout() works only in a coroutine that a Task runs")
        self.task = _running[-1]
        self.cancels = self.task.cancelling()
        self.timer = get_running_loop().call_later(self.delay, self._expire)

    def _expire(self) -> None:
        self.fired = self.task.cancel()  # the block is paused: its task is not done

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        self.timer.cancel()  # a block that ends in time leaves no timer behind
        # All the cancel() calls that come before the task's next step make one CancelledError,
        # and a cancel from outside (Ctrl-C, the crawl's end) can come with the timer's, even in
        # the same turn. So the timer's request is taken back (uncancel): if none is left, the
        # timer alone asked, and it is a timeout; if one is, the cancel stays a cancel
        # (returning None lets it go on). Turned into a TimeoutError it would be lost, as the
        # crawler retries a try that timed out. (asyncio's wait_for lost it so until 3.12.)
        if self.fired and isinstance(exc, CancelledError) and self.task.uncancel() == self.cancels:
            raise TimeoutError(f"timed out after {self.delay} s") from exc
