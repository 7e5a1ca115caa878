"""Where is every task waiting?  The tree of tasks, as Python 3.14's asyncio prints it.

A crawl that hangs looks like a crawl that is slow: nothing moves.  The question is where
each coroutine is paused, and who waits for whom.  Python 3.14 answers it for asyncio
(``asyncio.capture_call_graph``, ``format_call_graph``, ``python -m asyncio pstree``)::

    * Task(name='worker-0', id=0x7f...)
    + Call stack:
    |   File '.../crawler.py', line 60, in async Crawler.work()
    + Awaited by:
       * Task(name='crawl', id=0x7f...)
          + Call stack:
          |   File '.../crawler.py', line 48, in async Crawler.crawl()

One block per task: where its chain of coroutines is paused (innermost first) and, below,
the tasks that wait for it, each with its own chain.  asyncio refuses any Future that is
not its own, so stage 2 gets the same picture from here: its Task is a coroutine wrapped
in a Future, its chain a ``yield from`` chain of generators, and a task waits for another
when the future it is paused on (``_waiting_on``) is that task.

The stage command lines print the tree to standard error on SIGUSR1 (``kill -USR1 PID``,
where the system has it: faulthandler's convention) and, with ``-v``, at Ctrl-C before
the partial report (shared/cli.py).  Nothing here is a part of any stage.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # stages 1 and 2 never load asyncio: only a loop of asyncio's is asked of it
    import asyncio

#: One line of a call stack: file, line, "async Crawler.work" (innermost first).
StackEntry = tuple[str, int, str]


@dataclass
class Node:
    """A task (or a plain future) in the tree: where it is paused, and who waits for it."""

    label: str  # "Task(name='worker-0', id=0x7f...)"
    stack: list[StackEntry]
    awaited_by: list[Node] = field(default_factory=list)


def render(node: Node) -> list[str]:
    """One node's lines, its waiters' nested below it, in format_call_graph's shape."""
    lines = [f"* {node.label}"]
    if node.stack:
        lines.append("+ Call stack:")
        lines += [
            f"|   File {name!r}, line {line}, in {where}()" for name, line, where in node.stack
        ]
    if node.awaited_by:
        lines.append("+ Awaited by:")
        for waiter in node.awaited_by:
            first, *rest = render(waiter)
            lines += ["   " + first, *("      " + line for line in rest)]
    return lines


def chain(coro: Any) -> list[StackEntry]:
    """The frames of a paused ``await``/``yield from`` chain, innermost first."""
    entries = []
    while coro is not None:
        frame: FrameType | None = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        tag = "async" if hasattr(coro, "cr_frame") else "generator"
        code = frame.f_code
        entries.append((code.co_filename, frame.f_lineno, f"{tag} {code.co_qualname}"))
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return entries[::-1]


def label(task: Any) -> str:
    """A task as format_call_graph names it."""
    name = task.get_name() if hasattr(task, "get_name") else task.name
    return f"Task(name={name!r}, id={id(task):#x})"


# --- stage 2: our own Tasks -----------------------------------------------------------------


def generator_tasks() -> list[Any]:
    """Every stage 2 Task not yet done: asyncio keeps a weak set of its tasks, and we ask the
    garbage collector instead, which knows every object (slow, but only when asked)."""
    # By its class: asking an unknown object for an attribute may run its own code.
    return [
        obj
        for obj in gc.get_objects()
        if type(obj).__name__ == "Task" and hasattr(type(obj), "_wakeup") and not obj.done()
    ]


def generator_tree(tasks: list[Any]) -> list[Node]:
    """The tree of stage 2's tasks: a task waits for another if it is paused on it."""
    return [node_of(task, tasks, lambda waiter, t: waiter._waiting_on is t) for task in tasks]


def node_of(task: Any, tasks: list[Any], waits_for: Callable[[Any, Any], bool]) -> Node:
    """One task's node, with the tasks that wait for it (and theirs) nested below."""
    waiters = [node_of(w, tasks, waits_for) for w in tasks if waits_for(w, task)]
    return Node(label(task), chain(getattr(task, "_coro", None) or task.get_coro()), waiters)


# --- stage 3: asyncio's Tasks ---------------------------------------------------------------


def asyncio_tree(loop: asyncio.AbstractEventLoop) -> str:
    """Every task of an asyncio loop and where it waits; asyncio's own words on 3.14."""
    import asyncio  # loaded already: a loop of asyncio's runs

    tasks = list(asyncio.all_tasks(loop))
    if hasattr(asyncio, "format_call_graph"):  # Python 3.14: asyncio knows who awaits whom
        return "".join(asyncio.format_call_graph(task) + "\n" for task in tasks)

    # Before 3.14 a task does not note who awaits it: a waiter is a task paused on it,
    # or on a gather() of it (the crawl waits for its workers so).
    def waits_for(waiter: Any, task: Any) -> bool:
        fut = getattr(waiter, "_fut_waiter", None)
        return fut is task or task in getattr(fut, "_children", ())

    return "".join(
        f"{line}\n" for task in tasks for line in render(node_of(task, tasks, waits_for))
    )


def task_tree() -> str:
    """The tree of the tasks of the crawl running in this thread: stage 3's, else stage 2's."""
    if (asyncio := sys.modules.get("asyncio")) is not None:  # only stage 3 loads it
        with contextlib.suppress(RuntimeError):
            return asyncio_tree(asyncio.get_running_loop())
    tasks = generator_tasks()
    if not tasks:
        return "no tasks: stage 1 runs callbacks, not tasks\n"
    return "".join(f"{line}\n" for node in generator_tree(tasks) for line in render(node))


def dump(*_: object) -> None:
    """Write the task tree to standard error; a signal handler.

    It goes straight to the file descriptor, as faulthandler writes: a signal may come
    while a log line is half written to sys.stderr, and writing to it then would fail.
    """
    text = "--- tasks ---\n" + task_tree()
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a stderr without a file (a test's capture)
        sys.stderr.write(text)
        return
    with contextlib.suppress(OSError):  # nobody reads standard error: the crawl goes on
        os.write(fd, text.encode("utf-8", "replace"))


@contextlib.contextmanager
def on_sigusr1() -> Iterator[None]:
    """During the block, SIGUSR1 prints the task tree (where the system has that signal)."""
    sigusr1 = getattr(signal, "SIGUSR1", None)
    try:
        previous = signal.signal(sigusr1, dump) if sigusr1 is not None else False
    except ValueError:  # not the main thread, which alone may set a signal handler
        previous = False
    if previous is False or sigusr1 is None:  # Windows, or off the main thread: no asking
        yield
        return
    try:
        yield
    finally:
        signal.signal(sigusr1, signal.SIG_DFL if previous is None else previous)
