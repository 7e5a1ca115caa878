"""Stage 2 futures ("Building Coroutines With Generators"): a Future replaces the callback.

An I/O operation hands back a Future to wait for; the waiter, usually a Task, subscribes.
"""

from collections.abc import Callable, Generator
from typing import Any, Generic, Self, TypeVar, cast

from .events import get_running_loop

T = TypeVar("T")  # the framework's one type variable: "a result of some type T", everywhere

# A future starts pending and changes state exactly once.
_PENDING, _CANCELLED, _FINISHED = "PENDING", "CANCELLED", "FINISHED"


# Like asyncio's since Python 3.8, CancelledError derives from BaseException, not Exception:
# a broad `except Exception:` around a `yield from` (the crawler has one, to record bugs and
# go on) must not swallow a cancellation by accident, a timeout()'s neither: that one becomes
# a TimeoutError only as it leaves its `with` block.
class CancelledError(BaseException):
    """Raised at a coroutine's paused `yield from` when its Task is cancelled."""


class InvalidStateError(Exception):
    """Raised when a Future is asked for something its current state does not allow."""


class Future(Generic[T]):
    """A result that is not ready yet: it is set once, then read by anyone who waits."""

    def __init__(self) -> None:
        # The chapter's sketch stores the value in `self.result`, which hides the result()
        # method; every attribute here has a leading underscore and a name of its own.
        self._state = _PENDING
        self._result: T | None = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Self], object]] = []

    def done(self) -> bool:
        """Return True once the future has a result or an exception, or was cancelled."""
        return self._state != _PENDING

    def cancelled(self) -> bool:
        """Return True if the future was cancelled."""
        return self._state == _CANCELLED

    def exception(self) -> BaseException | None:
        """Return the stored exception, or None; raise as result() does if there is neither."""
        if self._state == _CANCELLED:
            raise CancelledError()
        if self._state == _PENDING:
            raise InvalidStateError("the future is still pending; wait for it first")
        return self._exception

    def result(self) -> T:
        """Return the result; raise the stored exception, CancelledError or InvalidStateError."""
        # Which one: the exception given to set_exception(), CancelledError if the future was
        # cancelled, InvalidStateError if it is still pending.
        if (exception := self.exception()) is not None:
            raise exception
        return cast(T, self._result)

    def set_result(self, result: T) -> None:
        """Store the result and schedule the callbacks; InvalidStateError if already done."""
        self._finish(_FINISHED, result, None)

    def set_exception(self, exception: BaseException) -> None:
        """Store an exception for result() to raise; InvalidStateError if already done."""
        self._finish(_FINISHED, None, exception)

    def cancel(self) -> bool:
        """Cancel the future and schedule its callbacks; return False if it was already done."""
        if self.done():
            return False
        self._finish(_CANCELLED, None, None)
        return True

    def add_done_callback(self, fn: Callable[[Self], object]) -> None:
        """Arrange for the loop to call fn(future) once the future is done (soon, if it is)."""
        if self.done():
            get_running_loop().call_soon(fn, self)
        else:
            self._callbacks.append(fn)

    def __iter__(self) -> Generator[Self, Any, T]:
        """Wait for the future inside a coroutine: `value = yield from future`."""
        # Footnote 12 of the chapter: a future that is already done must not pause its
        # waiter, so we only yield while pending. A done future costs no trip through the loop.
        if not self.done():
            yield self  # suspends: the Task waits for this future, then resumes us here
        return self.result()

    # Waiting inside an `async def`: `await future` runs the very generator of __iter__.
    def __await__(self) -> Generator[Self, Any, T]:
        return self.__iter__()  # `await future` is `yield from future` under a new name

    def _finish(self, state: str, result: T | None, exception: BaseException | None) -> None:
        if self.done():
            raise InvalidStateError(f"the future is already {self._state}")
        self._state, self._result, self._exception = state, result, exception
        # Schedule the callbacks instead of calling them here. Resolving one future often
        # resolves another (a Task is a future, and its step may finish it), so calling inline
        # would nest those calls into an ever deeper stack. The chapter's sketch calls inline.
        for fn in self._callbacks:
            get_running_loop().call_soon(fn, self)
        self._callbacks.clear()


def wake_all(waiters: list[Future[None]]) -> None:
    """Resolve each waiter's Future that is still pending, then forget them all."""
    # A waiter whose task was cancelled has a cancelled Future already: setting its result
    # would raise InvalidStateError. The Queue wakes its getters and joiners with this, and
    # sleep() its one sleeper, who may have been cancelled just before the timer fired.
    for fut in waiters:
        if not fut.done():
            fut.set_result(None)
    waiters.clear()


# A stage 2 coroutine is a generator that yields Futures and returns a T. This alias is our
# own name for that shape; it is not typing.Coroutine, which describes `async def` functions.
Coroutine = Generator[Future[Any], Any, T]
