"""Where is every task waiting?  One tree of tasks, from the main task down.

A crawl that hangs looks like a crawl that is slow: nothing moves.  The question is where
each coroutine is paused, and who waits for whom.  Python 3.14 answers it for asyncio with
``python -m asyncio pstree PID``: one tree, from the task that awaits down to the tasks it
awaits, each task once.  Here, in the same shape, for stages 2 and 3 alike::

    └── (T) crawl  id=0x7f...
        ├──  Crawler.crawl()  stage2_generators/crawler.py:40
        ├──  Queue.join()  stage2_generators/queues.py:63
        ├──  Future.__iter__()  stage2_generators/futures.py:92
        ├── (T) worker-0  id=0x7f...
        │   ├──  Crawler.work()  stage2_generators/crawler.py:57
        │   ├──  Crawler.robots()  stage2_generators/crawler.py:88
        │   ├──  Future.__iter__()  stage2_generators/futures.py:92
        │   └── (T) robots.txt  id=0x7f...
        │       ├──  Crawler.fetch()  stage2_generators/crawler.py:96
        ...

Under each task ``(T)``, its chain of coroutines, outermost first, down to the line where
the innermost is paused (below the call the crawl made into a library, the library's
own frames fold into one line that counts them: ``[2 frames of aiohttp]``); then the tasks
it awaits (``yield from task``, ``await task``, a
``gather()`` of tasks).  A task that no task awaits, a worker, hangs from the main task,
the one running ``Crawler.crawl``: stage 3's is asyncio.Runner's, named ``Task-1`` or so by
asyncio and ``crawl`` here, as in stage 2.  A task awaited by two appears once, under the
first; the second says so.  Tasks are in the order of their names, so a tree reads the
same from run to run.  asyncio refuses any Future that is not its own, so stage 2 gets the
picture from here: its Task is a coroutine wrapped in a Future, its chain a ``yield from``
chain of generators, and a task waits for another when the future it is paused on
(``_fut_waiter``) is that task.

The stage command lines print the tree to standard error on SIGUSR1 (``kill -USR1 PID``,
where the system has it: faulthandler's convention) and, with ``-v``, at Ctrl-C before
the partial report (shared/tools/cli.py); the show page shows it at every step.  Nothing here
is a part of any stage.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[3]  # the checkout: its files are named from here

#: One line of a call stack: where (``Crawler.work``), file, line (outermost first).
StackEntry = tuple[str, str, int]


@dataclass
class Node:
    """A task in the tree: its name and id, where it is paused, the tasks it awaits."""

    name: str
    id: int
    stack: list[StackEntry]
    awaits: list[Node] = field(default_factory=list)
    seen_above: bool = False  # awaited by another task too, and shown under that one


def render(node: Node, prefix: str = "", last: bool = True) -> list[str]:
    """A task's lines and its awaited tasks', in the shape of ``python -m asyncio pstree``."""
    lines = [f"{prefix}{'└── ' if last else '├── '}(T) {node.name}  id={node.id:#x}"]
    inner = prefix + ("    " if last else "│   ")
    if node.seen_above:
        return [lines[0] + "  (shown above, under the task that awaits it first)"]
    for n, (where, filename, line) in enumerate(node.stack):
        glyph = "└── " if n == len(node.stack) - 1 and not node.awaits else "├── "
        if where == FOLDED:
            lines.append(f"{inner}{glyph} [{line} frames of {filename}]")
        else:
            lines.append(f"{inner}{glyph} {where}()  {filename}:{line}")
    for n, child in enumerate(node.awaits):
        lines += render(child, inner, n == len(node.awaits) - 1)
    return lines


def shown_file(filename: str) -> str:
    """A source file as the tree names it: from the checkout, else its folder and name
    (``asyncio/queues.py``, ``aiohttp/client.py``), not the whole path."""
    path = Path(filename).resolve()
    # An installed package is a library's, even in an environment inside the checkout
    # (nox's .nox/, a .venv/), where the folder alone would call it ours.
    installed = {"site-packages", "dist-packages"} & set(path.parts)
    if not installed and not path.is_relative_to(Path(sys.base_prefix).resolve()):
        with contextlib.suppress(ValueError):
            return path.relative_to(ROOT).as_posix()
    return "/".join(path.parts[-2:])


def chain(coro: Any) -> list[StackEntry]:
    """The frames of a paused ``await``/``yield from`` chain, outermost first, a library's
    run of frames folded (:func:`fold`)."""
    entries = []
    while coro is not None:
        frame: FrameType | None = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        code = frame.f_code
        entries.append((code.co_qualname, shown_file(code.co_filename), frame.f_lineno))
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return fold(entries)


def fold(entries: list[StackEntry]) -> list[StackEntry]:
    """Fold each run of library frames below the call our code made into one entry.

    A fetch waiting to read in stage 3 is ten frames deep in aiohttp and asyncio; the
    reader wants the call the crawl made (``ClientSession._request``, kept) and how deep
    the wait goes beneath it, as pstree prints ``4*[{thread}]`` for four alike: one line,
    ``[9 frames of aiohttp, asyncio]``, whose libraries are in the file's place.
    """
    folded: list[StackEntry] = []
    run: list[StackEntry] = []
    for entry in [*entries, ("", "", 0)]:  # the last, empty, ends the last run
        if entry[1] and not ours(entry[1]):
            run.append(entry)
            continue
        if len(run) > 2:
            libraries = ", ".join(sorted({file.partition("/")[0] for _, file, _ in run[1:]}))
            run[1:] = [(FOLDED, libraries, len(run) - 1)]
        folded += run
        run = []
        if entry[1]:
            folded.append(entry)
    return folded


#: The name of a folded run's entry; its line number is how many frames it holds.
FOLDED = "[folded]"


def ours(shown: str) -> bool:
    """Tell whether a file, as shown, is the repository's (not a library's)."""
    return (ROOT / shown).is_file()


def coroutine_of(task: Any) -> Any:
    """A task's coroutine: stage 2's ``_coro``, asyncio's ``get_coro()``."""
    return getattr(task, "_coro", None) or task.get_coro()


def is_main(task: Any) -> bool:
    """Tell whether a task runs the crawl itself (``Crawler.crawl``): the main task."""
    code = getattr(coroutine_of(task), "cr_code", None) or getattr(
        coroutine_of(task), "gi_code", None
    )
    return code is not None and code.co_name == "crawl"


def task_name(task: Any) -> str:
    """A task's name, the same in stages 2 and 3: asyncio names the main task ``Task-1``
    (asyncio.Runner.run takes no name), stage 2 names it ``crawl``; both are ``crawl``."""
    name: str = task.get_name() if hasattr(task, "get_name") else task.name
    return "crawl" if re.fullmatch(r"Task-\d+", name) and is_main(task) else name


def order(task: Any) -> tuple[list[str | int], int]:
    """Sort by name, numbers as numbers (worker-2 before worker-10), then by id."""
    parts = re.split(r"(\d+)", task_name(task))
    return [int(p) if p.isdigit() else p for p in parts], id(task)


def tree(tasks: list[Any], waits_for: Callable[[Any, Any], bool]) -> list[Node]:
    """The tree of ``tasks``: the main task at the root, each task once.

    ``waits_for(waiter, task)`` says whether ``waiter`` is paused on ``task``.  Without a
    main task (tasks of something other than a crawl), each task no task awaits is a root.
    """
    tasks = sorted(tasks, key=order)
    awaited = {id(t) for t in tasks for w in tasks if w is not t and waits_for(w, t)}
    placed: set[int] = set()

    def node(task: Any) -> Node:
        placed.add(id(task))
        found = Node(task_name(task), id(task), chain(coroutine_of(task)))
        for other in tasks:
            if other is not task and waits_for(task, other):
                if id(other) in placed:
                    found.awaits.append(Node(task_name(other), id(other), [], seen_above=True))
                else:
                    found.awaits.append(node(other))
        return found

    roots = [t for t in tasks if id(t) not in awaited]
    main = next((t for t in roots if is_main(t)), None)
    if main is None:
        return [node(t) for t in roots if id(t) not in placed]
    top = node(main)
    top.awaits += [node(t) for t in roots if id(t) not in placed]
    return [top]


def lines(tasks: list[Any], waits_for: Callable[[Any, Any], bool]) -> list[str]:
    """The tree of ``tasks`` as text lines."""
    roots = tree(tasks, waits_for)
    return [line for n, root in enumerate(roots) for line in render(root, "", n == len(roots) - 1)]


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


def generator_waits_for(waiter: Any, task: Any) -> bool:
    """Stage 2: a task waits for another when the future it is paused on is that task."""
    return getattr(waiter, "_fut_waiter", None) is task


# --- stage 3: asyncio's Tasks ---------------------------------------------------------------


def asyncio_waits_for(waiter: Any, task: Any) -> bool:
    """asyncio: a task waits for another when paused on it, or on a gather() of it (the
    crawl waits for its workers so).  Before 3.14 a task does not note who awaits it."""
    fut = getattr(waiter, "_fut_waiter", None)
    return fut is task or task in getattr(fut, "_children", ())


def task_tree() -> str:
    """The tree of the tasks of the crawl running in this thread: stage 3's, else stage 2's."""
    if (asyncio := sys.modules.get("asyncio")) is not None:  # only stage 3 loads it
        with contextlib.suppress(RuntimeError):
            tasks = list(asyncio.all_tasks(asyncio.get_running_loop()))
            return "".join(f"{line}\n" for line in lines(tasks, asyncio_waits_for))
    tasks = generator_tasks()
    if not tasks:
        return "no tasks: stage 1 runs callbacks, not tasks\n"
    return "".join(f"{line}\n" for line in lines(tasks, generator_waits_for))


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
