"""Stage 2 event loop ("Coordinating Coroutines"): stage 1's loop, able to drive a Task.

New: a queue of ready callbacks (how Futures wake Tasks), and run_until_complete.
"""

import heapq
import itertools
import socket
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from selectors import EVENT_READ, EVENT_WRITE, BaseSelector, DefaultSelector
from typing import Any

from shared import observe
from shared.log import Logger
from shared.observe import Observer

from .events import _set_running_loop
from .futures import Coroutine, Future, T
from .tasks import Task

LOGGER = Logger(__name__)
Callback = Callable[..., object]


# asyncio's Handle keeps _callback and _args, and its TimerHandle _when behind a when()
# method; ours is a plain record, and only _cancelled keeps asyncio's name.
@dataclass(slots=True)
class Handle:
    """A callback for the loop to run, soon or once a timer is due; cancel() holds it back."""

    fn: Callback
    args: tuple[Any, ...]
    when: float = 0.0  # a timer's: when it is due, in time.monotonic() seconds
    _cancelled: bool = False

    def cancel(self) -> None:
        """Keep the callback from running, even once it is due; harmless if it already ran."""
        self._cancelled = True


class EventLoop:
    """Run callbacks when sockets are ready or timers are due, all in one thread."""

    def __init__(self, observer: Observer | None = None) -> None:
        self._selector: BaseSelector = DefaultSelector()
        self._ready: deque[Handle] = deque()
        # A heap of (when, sequence number, handle), where asyncio's _scheduled holds its
        # TimerHandles, ordered by their when. The sequence number breaks ties between equal
        # times, so timers due together run in the order they were set, and two handles are
        # never compared.
        self._scheduled: list[tuple[float, int, Handle]] = []
        self._sequence = itertools.count()
        # None, or it hears every resume of every Task (Task._step): by default whoever watches.
        self.observer = observer or observe.observer
        # We only ever run one loop at a time, so the newest loop becomes the running one.
        _set_running_loop(self)

    def call_soon(self, fn: Callback, *args: Any) -> None:
        """Run fn(*args) on the next turn of the loop."""
        self._ready.append(Handle(fn, args))

    def call_later(self, delay: float, fn: Callback, *args: Any) -> Handle:
        """Run fn(*args) after `delay` seconds; the returned handle can cancel it."""
        # time.monotonic(), not time.time(): a clock that never jumps when the wall clock is set.
        handle = Handle(fn, args, time.monotonic() + delay)
        heapq.heappush(self._scheduled, (handle.when, next(self._sequence), handle))
        return handle

    def add_reader(self, sock: socket.socket, fn: Callback) -> None:
        """Call fn() each time `sock` is readable, until remove_reader(sock)."""
        self._set_callback(sock, EVENT_READ, fn)

    def add_writer(self, sock: socket.socket, fn: Callback) -> None:
        """Call fn() each time `sock` is writable, until remove_writer(sock)."""
        self._set_callback(sock, EVENT_WRITE, fn)

    def remove_reader(self, sock: socket.socket) -> bool:
        """Stop watching `sock` for reading; return False if it was not watched."""
        return self._set_callback(sock, EVENT_READ, None)

    def remove_writer(self, sock: socket.socket) -> bool:
        """Stop watching `sock` for writing; return False if it was not watched."""
        return self._set_callback(sock, EVENT_WRITE, None)

    def _set_callback(self, sock: socket.socket, event: int, fn: Callback | None) -> bool:
        # A selector holds one key per socket. To let a socket wait to read *and* to write, the
        # key's data is a [reader, writer] pair and its mask combines both events. Registering
        # again keeps the key in step with the pair (a crawler's socket waits for one at a time).
        # Looked up by its number: for a socket it does not hold, the selector raises and
        # catches a KeyError whose message holds the socket's repr, two more system calls.
        # A closed loop's selector has no map (None): removing from it removes nothing and says
        # False, as asyncio's remove_reader does; a worker closed after a second Ctrl-C does so.
        key = (self._selector.get_map() or {}).get(sock.fileno())
        callbacks = key.data if key else [None, None]
        index = 0 if event == EVENT_READ else 1
        previous, callbacks[index] = callbacks[index], fn
        mask = (EVENT_READ if callbacks[0] else 0) | (EVENT_WRITE if callbacks[1] else 0)
        if key:
            self._selector.unregister(sock)
        if mask:
            self._selector.register(sock, mask, callbacks)
        return previous is not None

    def run_once(self) -> None:
        """Wait for I/O or the next timer, then run every callback that is ready."""
        while self._scheduled and self._scheduled[0][2]._cancelled:
            heapq.heappop(self._scheduled)  # a cancelled timer must not cut the wait short
        timeout: float | None = None  # block until a socket is ready
        if self._ready or self._scheduled:  # work waits: only poll; a timer: wait until it is due
            timeout = 0 if self._ready else max(0.0, self._scheduled[0][0] - time.monotonic())
        elif not self._selector.get_map():
            # Without this check select() would sleep forever: say so instead.
            raise RuntimeError("deadlock: no callback, timer or socket can ever wake the loop")
        for key, events in self._selector.select(timeout):
            for callback, event in zip(key.data, (EVENT_READ, EVENT_WRITE), strict=True):
                if callback and events & event:
                    self.call_soon(callback)
        while self._scheduled and self._scheduled[0][0] <= time.monotonic():
            self._ready.append(heapq.heappop(self._scheduled)[2])  # due: it runs in this turn
        # Run only the callbacks that are ready now. Those they schedule wait for the next
        # turn, so a long chain of call_soon cannot keep the loop from polling its sockets.
        for _ in range(len(self._ready)):
            handle = self._ready.popleft()
            try:
                # Asked now, not when the timer fell due: a callback that ran before it in this
                # turn may have cancelled it, as a response that beats its timeout just in time
                # does. The timer would then cancel a task that has moved on (as asyncio does).
                if not handle._cancelled:
                    handle.fn(*handle.args)
            except Exception as exc:
                # A bug in one callback must not stop every other coroutine. (A Task catches
                # its coroutine's exceptions itself and stores them, so they never get here.)
                # asyncio passes it to a handler you can replace (set_exception_handler); we log.
                LOGGER.error("Exception in callback %r", handle.fn, exc_info=exc)

    def run_until_complete(self, future: Future[T] | Coroutine[T]) -> T:
        """Run until `future` (a generator is wrapped in a Task) is done; return its result."""
        # The future's exception, if it failed, is raised here by result().
        future = Task(future) if isinstance(future, Generator) else future
        # The chapter stops the loop with a done callback that raises StopError. Checking
        # done() after each turn has the same effect and is easier to follow.
        while not future.done():
            self.run_once()
        return future.result()

    def close(self) -> None:
        """Release the selector; the loop cannot be used again."""
        self._selector.close()
        _set_running_loop(None)
