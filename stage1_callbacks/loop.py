"""A hand-made event loop: select() on many sockets, then run their callbacks.

Chapter: "Async" and "Programming With Callbacks".  The selector keeps, with each
socket, the callback to run when that socket is ready: that callback is the
continuation of whatever was waiting.  Timers (``call_later``) live on a heap, so
the loop knows how long ``select()`` may sleep.  Nothing here knows about HTTP.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

from shared import observe
from shared.log import Logger
from shared.observe import Observer

LOGGER = Logger(__name__)

Callback = Callable[..., object]
#: Called as ``handler(exc, callback)`` when a callback raises; see :class:`EventLoop`.
ExceptionHandler = Callable[[Exception, Callback], None]


class TimerHandle:
    """A callback due at a given time; ``cancel()`` keeps it from running."""

    __slots__ = ("_cancelled", "args", "callback", "when")  # no __dict__: one per fetch

    def __init__(self, when: float, callback: Callback, args: tuple[Any, ...]) -> None:
        """Remember what to call and when (in the loop's monotonic clock)."""
        self.when = when
        self.callback = callback
        self.args = args
        self._cancelled = False

    def cancel(self) -> None:
        """Keep the callback from running; harmless once it has run."""
        self._cancelled = True

    def cancelled(self) -> bool:
        """Return True if cancel() was called."""
        return self._cancelled


def log_exception(exc: Exception, callback: Callback) -> None:
    """The default handler: log the exception and its traceback, and carry on."""
    LOGGER.error("exception in callback %r", callback, exc_info=exc)


class EventLoop:
    """Run callbacks when their sockets are ready or their timers are due, in one thread.

    A callback that raises does not stop the loop: the exception goes to
    ``exception_handler(exc, callback)``.  Passing the callback lets the handler find
    out whose callback it was (a bound method knows its object), because the
    traceback will not tell it: by the time a callback runs, whoever registered it
    has long returned.  That loss is the chapter's "stack ripping".
    """

    def __init__(
        self, exception_handler: ExceptionHandler = log_exception, observer: Observer | None = None
    ) -> None:
        """Make a loop with its own selector; close() releases it.  An observer hears every step."""
        self.selector = selectors.DefaultSelector()
        self.exception_handler = exception_handler
        self.observer = observer or observe.observer  # by default whoever watches now, or None
        # A heap of (when, sequence number, handle).  The sequence number breaks ties,
        # so timers due at the same time run in the order they were set, and two
        # handles are never compared.
        self._scheduled: list[tuple[float, int, TimerHandle]] = []
        self._sequence = itertools.count()

    def time(self) -> float:
        """Return the loop's clock: monotonic seconds, deaf to changes of the wall clock."""
        return time.monotonic()

    def register(self, sock: socket.socket, events: int, callback: Callback) -> None:
        """Call ``callback(key, mask)`` when ``sock`` is ready for ``events``.

        A socket waits for one thing at a time, so registering it again replaces its
        event and callback: the new callback is its new continuation.
        """
        try:
            self.selector.modify(sock, events, callback)
        except KeyError:  # not registered yet
            self.selector.register(sock, events, callback)

    def unregister(self, sock: socket.socket) -> None:
        """Stop watching ``sock``; harmless if it is not watched.  Call it before closing."""
        with contextlib.suppress(KeyError):
            self.selector.unregister(sock)

    def call_later(self, delay: float, callback: Callback, *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` after ``delay`` seconds; the handle can cancel it."""
        handle = TimerHandle(self.time() + delay, callback, args)
        heapq.heappush(self._scheduled, (handle.when, next(self._sequence), handle))
        return handle

    def call_soon(self, callback: Callback, *args: Any) -> TimerHandle:
        """Run ``callback(*args)`` on the loop's next turn, after the sockets are polled."""
        # A timer that is due at once: one heap serves both, and the sequence number
        # keeps call_soon callbacks in the order they were scheduled.
        return self.call_later(0, callback, *args)

    def run_until(self, done: Callable[[], bool]) -> None:
        """Run turns of the loop until ``done()`` is true.

        Raises RuntimeError rather than sleeping forever when no socket and no timer
        is left that could ever make ``done()`` true.
        """
        while not done():
            self.run_once()

    def run_once(self) -> None:
        """Wait for the first ready socket or due timer, then run what is ready."""
        # A cancelled timer must not cut the wait short.  (CPython also rebuilds the
        # heap when cancelled timers are half of it; ours wait to reach the top.)
        while self._scheduled and self._scheduled[0][2].cancelled():
            heapq.heappop(self._scheduled)
        if self._scheduled:
            timeout: float | None = max(0.0, self._scheduled[0][0] - self.time())
        elif self.selector.get_map():
            timeout = None  # no timer: sleep until a socket is ready
        else:
            raise RuntimeError("the loop has nothing to wait for: no socket, no timer")
        for key, mask in self.selector.select(timeout):
            # An earlier callback of this turn may have unregistered this socket (and
            # a new socket may even have its file descriptor): run only current keys.
            if self.selector.get_map().get(key.fd) is key:
                self._run(key.data, key, mask)  # the stored callback: the continuation
        now = self.time()
        while self._scheduled and self._scheduled[0][0] <= now:
            handle = heapq.heappop(self._scheduled)[2]
            # Checked now, not when select() returned: a callback of this very turn
            # may have cancelled it (a response that beat its own timeout).
            if not handle.cancelled():
                self._run(handle.callback, *handle.args)

    def _run(self, callback: Callback, *args: Any) -> None:
        """Run one callback; an exception goes to the handler, the loop goes on."""
        if self.observer:  # each callback is one step of the crawl: it hears each, before it runs
            self.observer.callback(callback, args)
        try:
            callback(*args)
        except Exception as exc:
            # Stack ripping: the traceback starts here, in the loop.  Whatever started
            # the chain of callbacks that led to this one returned long ago.
            # KeyboardInterrupt is no Exception: it leaves the loop, as Ctrl-C should.
            self.exception_handler(exc, callback)

    def close(self) -> None:
        """Release the selector and forget the timers; the loop cannot be used again."""
        self.selector.close()
        self._scheduled.clear()
