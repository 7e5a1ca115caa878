"""Ctrl-C as news for an event loop, not an exception that lands anywhere.

Python turns SIGINT into KeyboardInterrupt, raised in the main thread between any two
bytecodes: inside a callback, halfway through the selector's bookkeeping, inside a
Task's step.  A loop written by hand is then left half-updated, and its clean-up runs
on a state nobody planned for.  ``asyncio.Runner`` (Python 3.11) takes the first Ctrl-C
another way, and stages 1 and 2 copy it with :class:`CtrlC`:

1. the signal handler only counts the press and writes one byte to a socket that the
   loop watches: select() cannot wait for a signal, but it can wait for a socket (the
   "self-pipe" trick; asyncio's C-level cousin is ``signal.set_wakeup_fd``);
2. the loop sees that socket readable and runs the stage's own clean-up as ordinary
   steps: stage 2 cancels its main task, stage 1 closes every Fetcher;
3. a second Ctrl-C raises KeyboardInterrupt at once, for a crawl that will not stop.

Stage 3 takes Ctrl-C as asyncio.Runner does, by a handler of ours (:func:`left_to_asyncio`).
A stage's ``__main__`` takes Ctrl-C over (:func:`taken_over`) before anything else, so that
a Ctrl-C while the program imports and starts up is news too, read by the loop at its first
turn.  SIGUSR1, which asks for the task tree (shared/tools/instruments/tasktree.py), is taken
over at the same moment: until the crawl runs, it is answered "no tasks yet", not by the
signal's default action, which ends the program.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only stage 3 runs on asyncio: stages 1 and 2 never load it (nor threads)
    import asyncio


class PipeClosed(KeyboardInterrupt):
    """Our output's reader went away (``| head``): stop now, as after a second Ctrl-C.

    Unix ends a program that writes to a closed pipe with SIGPIPE; Python ignores that
    signal and raises BrokenPipeError instead, which a crawler's ``except Exception``
    (there to record a bug and go on) would swallow at every step.  As a
    KeyboardInterrupt it stops the crawl at once, and the partial result is still written.
    """


class CtrlC:
    """Count Ctrl-C presses and wake a select() loop through a socket it watches."""

    def __init__(self) -> None:
        """Open the socket pair; :func:`install` makes this object the SIGINT handler."""
        self.presses = 0
        self.reader, self._writer = socket.socketpair()  # the loop watches ``reader``
        self.reader.setblocking(False)
        self._writer.setblocking(False)

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler: note the press and wake the loop; raise on the second one."""
        # This runs in the main thread between two bytecodes of whatever it was doing, so
        # it changes nothing that code may be in the middle of: a count and one byte.
        self.presses += 1
        if self.presses > 1:
            raise KeyboardInterrupt
        tell_first_press()
        with contextlib.suppress(OSError):  # full or closed: the loop has been told already
            self._writer.send(b"\0")

    def on_press(self, stop: Callable[[], object]) -> Callable[..., None]:
        """Return a loop callback for ``reader``: empty the socket, then call ``stop()``."""

        def on_ctrl_c(*args: object) -> None:  # stage 1 passes (key, mask), stage 2 nothing
            with contextlib.suppress(OSError):  # BlockingIOError: nothing (more) to read
                while self.reader.recv(4096):
                    pass
            stop()

        return on_ctrl_c

    def close(self) -> None:
        """Close the socket pair."""
        self.reader.close()
        self._writer.close()


_installed: CtrlC | None = None

#: Called at the first Ctrl-C, before the crawl hears of it: ``-v`` prints the task tree
#: (shared/tools/instruments/tasktree.py) while every task is still paused where the press found it.
at_first_press: list[Callable[[], object]] = []


def tell_first_press() -> None:
    """Call the :data:`at_first_press` hooks, from the SIGINT handler."""
    for hook in at_first_press:
        hook()


def install() -> CtrlC | None:
    """Take Ctrl-C over for the rest of the process; see :func:`taken_over`.

    Signals reach only the main thread: elsewhere nothing is installed and None returned.
    """
    global _installed
    if _installed is None:
        ctrl_c = CtrlC()
        try:
            signal.signal(signal.SIGINT, ctrl_c.on_sigint)
        except ValueError:  # not the main thread, which alone may set a signal handler
            ctrl_c.close()
            return None
        _installed = ctrl_c
    return _installed


def no_tasks_yet(signum: int, frame: FrameType | None) -> None:
    """SIGUSR1 before the crawl runs: say there is no task tree yet, and go on starting."""
    with contextlib.suppress(OSError):  # straight to the descriptor, as tasktree.dump writes
        os.write(2, b"--- tasks ---\nno tasks yet: the program is still starting\n")


@contextlib.contextmanager
def taken_over() -> Iterator[None]:
    """Own Ctrl-C from a program's first line to its last: a stage's ``__main__`` runs in this.

    SIGUSR1 too (where the system has it): a request for the task tree that comes while
    the program still imports is answered, not fatal; the crawl puts the tree's own
    handler in while it runs.  On the way out both are ignored: Python's shutdown puts
    the default action back (death by the signal, exit status -2), and the work is done,
    so a late signal has nothing left to stop or to show.
    """
    main_thread = install() is not None  # signals reach the main thread alone
    sigusr1 = getattr(signal, "SIGUSR1", None) if main_thread else None  # none on Windows
    if sigusr1 is not None:
        signal.signal(sigusr1, no_tasks_yet)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if sigusr1 is not None:
            signal.signal(sigusr1, signal.SIG_IGN)


@contextlib.contextmanager
def caught() -> Iterator[CtrlC | None]:
    """Make Ctrl-C news for a hand-made loop during the block; yield what it must watch.

    In a stage's program the handler installed at start-up serves.  Elsewhere (a test,
    a notebook) one is installed for the block and the previous handler comes back
    after.  Off the main thread no signal can arrive, and None is yielded.
    """
    global _installed
    previous = signal.getsignal(signal.SIGINT)  # None: not set from Python
    if _installed is not None or (ctrl_c := install()) is None:
        yield _installed  # the program's own handler, or None off the main thread
        return
    try:
        yield ctrl_c
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
        ctrl_c.close()
        _installed = None


@contextlib.contextmanager
def left_to_asyncio(runner: asyncio.Runner) -> Iterator[None]:
    """Ctrl-C for an asyncio.Runner's block (stage 3), as the Runner takes it, then ours again.

    Our handler does for the block what the Runner's own does: the first press cancels
    the main task, thread-safely (``call_soon_threadsafe`` wakes the loop, as our socket
    does stages 1 and 2's), and the CancelledError that ends ``run()`` leaves the block as
    KeyboardInterrupt; a second press raises KeyboardInterrupt at once.  Ours, not the
    Runner's, so that the first press is told (:data:`at_first_press`) before the task
    hears of it.  The main task is the first the Runner's loop makes (``run()`` makes it),
    seen through the loop's task factory, a public hook.  The loop is made first, while a
    press is still only counted: a KeyboardInterrupt in the middle of making a loop leaves
    half a loop, whose clean-up by the garbage collector prints an error.  A press that
    came before the block (while the program started) ends the crawl at once.
    """
    if _installed is None:
        yield
        return
    import asyncio  # stage 3's: it has loaded asyncio already

    loop = runner.get_loop()
    if _installed.presses:
        raise KeyboardInterrupt
    main: list[asyncio.Task[Any]] = []

    def first_task(loop: asyncio.AbstractEventLoop, coro: Any, context: Any = None) -> Any:
        loop.set_task_factory(None)  # the main task alone: the others are made as usual
        main.append(asyncio.Task(coro, loop=loop, context=context))
        # Python 3.13.0's create_task names a factory's task after its own name argument,
        # None when none is given (3.13.1 leaves it be): asyncio's name is put back.
        loop.call_soon(main[0].set_name, main[0].get_name())
        return main[0]

    presses = 0

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal presses
        presses += 1
        if presses > 1 or not main:  # a second press, or one before run() made the main task
            raise KeyboardInterrupt
        tell_first_press()
        loop.call_soon_threadsafe(main[0].cancel)

    loop.set_task_factory(first_task)
    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    except asyncio.CancelledError:
        if not presses:
            raise
        raise KeyboardInterrupt from None  # the main task cancelled by a press: as the Runner's
    finally:
        loop.set_task_factory(None)
        signal.signal(signal.SIGINT, _installed.on_sigint)
