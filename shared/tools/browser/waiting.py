"""Waiting in a browser tab: one thread, no socketpair(), no timer signal.

Python in a tab (Pyodide) runs in the one thread of a Web Worker.  There, select() never
waits, no thread starts, socketpair() cannot be made, no interval timer interrupts a
test that waits too long, and the monotonic clock starts when the page opens.  The
exercises' tests use the first four to drive a loop: a byte sent on one end of a
socketpair() makes the other end readable; a helper thread sends it a moment later, or
wakes with a signal a select() that waits for nothing; and SIGALRM stops a test past its
time limit (tests/exercises/conftest.py).

The stand-ins below give those tests what they ask for in that one thread.  A loop waits
in select(), so that is where time passes: the stand-in selector sleeps until the first
of its timeout, a helper's timer and the time limit, runs what has come due, and looks
again, as the terminal's select() would be woken by the helper thread or the signal.  The
stages' code is the repository's; install() replaces only the modules' entries, in the
tab alone (tab.py calls it under Pyodide; tests/test_browser.py runs the tab's checks).
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

#: The stand-in sockets open now, by file descriptor: a selector asks them if they are ready.
PAIRED: dict[int, PairedSocket] = {}
#: The helpers' timers started and not yet run or cancelled: (when, order, timer).
_due: list[tuple[float, int, Timer]] = []
_order = itertools.count()
#: When SIGALRM is due (setitimer), if it is set.
_alarm: list[float] = []
#: How far back the tab's monotonic clock starts.  A terminal's counts from the machine's
#: start, hours or days ago; a tab's from the page's, seconds ago.  A wrong answer that
#: hands select() a reading of the clock instead of a wait would sleep seconds in the tab
#: and for ever in a terminal: a day back, it sleeps as long in both.
CLOCK_START = 86400.0
_real_monotonic = time.monotonic


class WaitsForever(BaseException):
    """select() was asked to wait with nothing that could ever end the wait.

    In a terminal that select() hangs until the test's time limit.  A BaseException, as
    the time limit's own is, so that no `except Exception` of the code under test takes it.
    """


class PairedSocket:
    """One end of the stand-in socketpair(): what is sent on one end waits for the other.

    Its file descriptor is a real one (os.devnull, opened), the lowest free, as a socket's
    is, so that a selector can key it and a closed one's number is used again; whether it
    is ready is the stand-in's to say (WaitingSelector), not the descriptor's.
    """

    def __init__(self) -> None:
        """A fresh end, not connected yet (socketpair() connects two)."""
        self.fd = os.open(os.devnull, os.O_RDONLY)
        self.waiting = bytearray()  # sent by the peer, not received yet
        self.peer: PairedSocket | None = None
        self.closed = False
        self.blocking = True
        PAIRED[self.fd] = self

    def __repr__(self) -> str:
        return f"<PairedSocket fd={self.fileno()}>"

    def fileno(self) -> int:
        """The file descriptor, or -1 once closed, as a socket's."""
        return -1 if self.closed else self.fd

    def setblocking(self, flag: bool) -> None:
        """Whether recv() waits for bytes, or raises BlockingIOError when there are none."""
        self.blocking = flag

    def _open(self) -> None:
        if self.closed:
            raise OSError(errno.EBADF, "Bad file descriptor")

    def send(self, data: bytes) -> int:
        """Hand the bytes to the other end, all of them; how many."""
        self._open()
        if self.peer is None or self.peer.closed:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        self.peer.waiting += data
        return len(data)

    def sendall(self, data: bytes) -> None:
        """As send(): the other end takes every byte at once."""
        self.send(data)

    def readiness(self) -> int:
        """The selector events this end is ready for: writable while open, readable when
        bytes wait or the other end has closed (recv() then returns b"")."""
        if self.closed:
            return 0
        eof = self.peer is None or self.peer.closed
        return selectors.EVENT_WRITE | (selectors.EVENT_READ if self.waiting or eof else 0)

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes that wait; b"" once the other end closed.  With none yet, a
        non-blocking end raises BlockingIOError and a blocking one waits as select() does."""
        self._open()
        if not self.readiness() & selectors.EVENT_READ:
            if not self.blocking:
                raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
            wait_until(lambda: bool(self.readiness() & selectors.EVENT_READ), None)
        data = bytes(self.waiting[:size])
        del self.waiting[:size]
        return data

    def close(self) -> None:
        """Close this end: the other end reads b"", and the descriptor is free again."""
        if not self.closed:
            self.closed = True
            del PAIRED[self.fd]
            os.close(self.fd)

    def __enter__(self) -> PairedSocket:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def socketpair(*args: object) -> tuple[PairedSocket, PairedSocket]:
    """socket.socketpair()'s stand-in: two ends, each the other's peer."""
    left, right = PairedSocket(), PairedSocket()
    left.peer, right.peer = right, left
    return left, right


class Timer:
    """threading.Timer's stand-in: ``function(*args)`` runs after ``interval`` seconds, in
    the one thread there is, from within the wait that reaches its time (wait_until)."""

    def __init__(
        self,
        interval: float,
        function: Callable[..., object],
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """A timer, not started."""
        self.interval = interval
        self.function = function
        self.args = tuple(args or ())
        self.kwargs = dict(kwargs or {})
        self.daemon = True
        self.finished = False

    def start(self) -> None:
        """Count down from now."""
        heapq.heappush(_due, (time.monotonic() + self.interval, next(_order), self))

    def cancel(self) -> None:
        """Do not run, if it has not run yet."""
        self.finished = True

    def join(self, timeout: float | None = None) -> None:
        """Nothing to wait for: a timer runs in this thread, or not at all."""

    def is_alive(self) -> bool:
        """Whether it is counting down."""
        return not self.finished and any(entry[2] is self for entry in _due)


def pthread_kill(thread_id: int, signum: int) -> None:
    """signal.pthread_kill()'s stand-in: there is one thread, so the signal's handler runs
    here and now, and what it raises comes out of the wait that ran the timer sending it."""
    handler = signal.getsignal(signum)
    if callable(handler):
        handler(signum, None)


def setitimer(which: int, seconds: float, interval: float = 0.0) -> tuple[float, float]:
    """signal.setitimer()'s stand-in (ITIMER_REAL, once): SIGALRM's handler runs when a wait
    reaches the time, so a test that waits too long ends, as in a terminal; a test that
    computes for ever is not stopped (the page stops the whole check instead)."""
    previous = getitimer(which)
    _alarm.clear()
    if seconds > 0:
        _alarm.append(time.monotonic() + seconds)
    return previous


def getitimer(which: int) -> tuple[float, float]:
    """signal.getitimer()'s stand-in: the seconds left until SIGALRM, and no interval."""
    return (max(0.0, _alarm[0] - time.monotonic()) if _alarm else 0.0, 0.0)


def next_due() -> float | None:
    """When the next timer or the alarm is due, if any is set."""
    while _due and _due[0][2].finished:
        heapq.heappop(_due)
    times = [_due[0][0]] if _due else []
    return min(times + _alarm, default=None)


def run_due() -> None:
    """Run each timer that has come due, in the order of their times, then the alarm."""
    now = time.monotonic()
    while _due and _due[0][0] <= now:
        timer = heapq.heappop(_due)[2]
        if not timer.finished:
            timer.finished = True
            timer.function(*timer.args, **timer.kwargs)
    if _alarm and _alarm[0] <= now:
        _alarm.clear()
        pthread_kill(threading.get_ident(), signal.SIGALRM)


def wait_until(done: Callable[[], bool], deadline: float | None) -> None:
    """Sleep until ``done()`` or the deadline, running the timers that come due meanwhile."""
    while True:
        run_due()
        now = time.monotonic()
        if done() or (deadline is not None and now >= deadline):
            return
        wake = min((t for t in (deadline, next_due()) if t is not None), default=None)
        if wake is None:
            raise WaitsForever(
                "a wait that nothing could end: no socket here can become ready, and no "
                "timer is set (a terminal would hang until the test's time limit)"
            )
        time.sleep(max(0.0, wake - now))


class WaitingSelector(selectors.PollSelector):
    """selectors.DefaultSelector's stand-in, which waits as a terminal's select() does.

    The stand-in sockets say themselves whether they are ready; any other file is polled.
    Until one is ready, it sleeps until the timeout or the next timer, whichever is first.
    """

    def ready(self) -> list[tuple[selectors.SelectorKey, int]]:
        """The registered files ready now, and for what."""
        found = []
        others = False
        for key in list(self.get_map().values()):
            if (sock := PAIRED.get(key.fd)) is None:
                others = True
            elif events := key.events & sock.readiness():
                found.append((key, events))
        if others:  # Pyodide's poll() never waits; the stand-ins' descriptors are not asked
            found += [(k, e) for k, e in super().select(0) if k.fd not in PAIRED]
        return found

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        """As select(): the ready files, once one is, or [] when the timeout has passed."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        found: list[tuple[selectors.SelectorKey, int]] = []

        def any_ready() -> bool:
            found[:] = self.ready()
            return bool(found)

        wait_until(any_ready, deadline)
        return found


def monotonic() -> float:
    """time.monotonic()'s stand-in: the same clock, started a day earlier (CLOCK_START)."""
    return _real_monotonic() + CLOCK_START


def install() -> None:
    """Put the stand-ins in the modules' places (in a tab only: a terminal has the real ones).

    Before any stage is imported: stage 2's loop takes DefaultSelector when it is imported.
    """
    selectors.DefaultSelector = WaitingSelector  # type: ignore[misc,assignment]
    socket.socketpair = socketpair  # type: ignore[assignment]
    threading.Timer = Timer  # type: ignore[misc,assignment]
    signal.pthread_kill = pthread_kill
    signal.setitimer = setitimer
    signal.getitimer = getitimer
    time.monotonic = monotonic
