"""--trace: one line per step of the event loop, in one format for every stage.

Each line reads ``time  who  what  url``: when the step ran (seconds since the
crawl began), who ran (a socket's file descriptor in stage 1, a task in stages 2 and
3), what ran (the callback, or the chain of coroutines resumed and the value it was
handed) and for which URL (``-``: none, as for a worker waiting at the queue for its
next one).  A header line names the columns first.  On a tiny site with ``--max-tasks 2``
the lines show fetches interleaving: one fetch pauses, another runs, the first resumes.

The :class:`Tracer` is an observer (shared/observe.py): it hears stage 1's loop run each
callback and stage 2's Tasks resume, and follows stage 3's coroutines itself.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import inspect
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from inspect import CO_COROUTINE
from selectors import EVENT_READ, SelectorKey
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any, TextIO

from shared.interrupt import PipeClosed
from shared.observe import Observer

if TYPE_CHECKING:
    from shared.crawling import BaseCrawler
    from shared.report import CrawlResult


def summarize(value: Any) -> str:
    """Say in a few characters what a coroutine was resumed with."""
    if isinstance(value, bytes):
        return f"bytes[{len(value)}]"
    if isinstance(value, BaseException):
        return f"raise {type(value).__name__}"
    if value is None or isinstance(value, int | str | tuple):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return type(value).__name__  # a Response, say: its repr would fill the line


def coroutine_chain(coro: Any) -> tuple[list[str], str | None]:
    """Follow a paused coroutine's ``yield from``/``await`` chain down to where it waits.

    Return the names of the functions on the way (outermost first) and the innermost
    ``url`` local variable found: the state a callback had to save by hand lives in
    these frames.  A frame paused at the queue's ``get`` is between two URLs: its ``url``
    is the one it finished with, and an idle worker is shown with none.
    """
    frames = []
    while coro is not None:
        frame = getattr(coro, "gi_frame", None) or getattr(coro, "cr_frame", None)
        if frame is None:
            break
        frames.append(frame)
        coro = getattr(coro, "gi_yieldfrom", None) or getattr(coro, "cr_await", None)
    names = [f.f_code.co_name for f in frames if f.f_code.co_name != "__iter__"]  # plumbing
    below = [f.f_code.co_name for f in frames[1:]] + [None]
    return names, innermost_url(frames, below)


def innermost_url(frames: list[FrameType], below: list[str | None]) -> str | None:
    """The ``url`` of the innermost frame that has one, unless it waits at a queue's
    ``get`` (``below``: the name of the function each frame waits in): an idle worker's
    ``url`` is the last one it fetched."""
    url = None
    for frame, waits_in in zip(frames, below, strict=True):
        if "url" in frame.f_locals:
            url = None if waits_in == "get" else frame.f_locals["url"]
    return url


class Tracer(Observer):
    """Print trace lines to a stream (stderr by default).

    When nobody reads the lines any more (``--trace 2>&1 | head``), the tracer stops
    the crawl itself: it raises :class:`~shared.interrupt.PipeClosed`, once, from the step
    it was told of, and the crawl ends there as after a second Ctrl-C.
    """

    def __init__(self, out: TextIO | None = None) -> None:
        """Start the clock (again when a crawl starts); lines go to ``out``."""
        self.out = out or sys.stderr
        self.t0 = time.monotonic()
        self.closed = False  # set once nobody reads the lines any more
        self.following = contextlib.ExitStack()  # stage 3's coroutines, while it crawls

    def crawl_started(self, crawler: BaseCrawler) -> None:
        """Start the clock and name the columns; for a crawl on asyncio (``async def
        crawl``), follow its coroutines."""
        self.t0 = time.monotonic()
        self.header(crawler.stage == "stage1_callbacks")
        # An `async def crawl` may run on stage 2's own loop too (the exercise s2-await):
        # there its Task tells resume() each step, and asyncio has no task to name.
        on_asyncio = crawler.stage != "stage2_generators"
        if on_asyncio and inspect.iscoroutinefunction(getattr(crawler, "crawl", None)):
            filename = inspect.getfile(type(crawler))
            self.following.enter_context(trace_coroutines(self, filename, asyncio_task_name))

    def crawl_finished(self, result: CrawlResult) -> None:
        """Stop following coroutines, if this crawl's were followed."""
        self.following.close()

    def header(self, callbacks: bool) -> None:
        """Print the line that names the columns: what a step is differs by stage."""
        who, what = ("socket or timer", "event -> callback run") if callbacks else HEADER_TASKS
        self.print_line(f"{'seconds':>8}  {who:<16} {what:<44} url")

    def print_line(self, text: str) -> None:
        """Print one line; raise PipeClosed, once, when the reader has gone."""
        if self.closed:
            return
        try:
            print(text, file=self.out)
        except BrokenPipeError:
            self.closed = True
            elapsed = time.monotonic() - self.t0
            raise PipeClosed(f"trace output closed at {elapsed:.4f} s") from None

    def line(self, who: str, what: str, url: str | None = None) -> None:
        """Print one step: who ran, what it ran, for which URL.

        Raises PipeClosed, once, when the reader has gone (``--trace 2>&1 | head``).
        """
        elapsed = time.monotonic() - self.t0
        self.print_line(f"{elapsed:8.4f}  {who:<16} {what:<44} {url or '-'}")

    def callback(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Stage 1: a callback runs; its object (a Fetcher) knows the URL."""
        who, event = callback_event(args)
        name = getattr(callback, "__name__", repr(callback))
        url = getattr(getattr(callback, "__self__", None), "url", None)
        self.line(who, f"{event} -> {name}", url)

    def resume(self, task: Any, value: Any) -> None:
        """Stage 2: a task resumes its coroutine with a value or an exception."""
        names, url = coroutine_chain(task._coro)
        self.line(task.name, f"{'>'.join(names)} <- {summarize(value)}", url)


#: Stages 2 and 3: a task ran the chain of coroutines it resumed, handed a value
#: (``<-``) by what it waited for; a task's first step starts its coroutine.
HEADER_TASKS = ("task", "coroutines resumed <- value handed in")


def callback_event(args: tuple[Any, ...]) -> tuple[str, str]:
    """Who a stage 1 callback runs for, and why: ("fd 7", "readable"), or ("timer", "due").

    The loop calls a socket's callback with the selector's ``(key, mask)``, and a timer's
    with whatever arguments it was set with.
    """
    if len(args) == 2 and isinstance(args[0], SelectorKey) and isinstance(args[1], int):
        key, mask = args
        return f"fd {key.fd}", "readable" if mask & EVENT_READ else "writable"
    return "timer", "due"


def asyncio_task_name() -> str:
    """Name the running asyncio task, for stage 3's lines ("worker-3"), as stage 2 names
    its own: the main task, "Task-1" to asyncio, is "crawl" (tasktree.py)."""
    import asyncio  # only a crawl on asyncio asks, and it has loaded asyncio already

    from shared.tools.instruments.tasktree import task_name

    task = asyncio.current_task()
    return task_name(task) if task else "-"


@functools.cache
def first_resume(code: CodeType) -> int:
    """The offset of a code object's first RESUME: where a coroutine's frame first enters.

    Since Python 3.11 a coroutine's code begins with set-up that runs when the coroutine
    object is made (RETURN_GENERATOR, POP_TOP), so a frame entered for the first time
    already has an ``f_lasti`` above zero.  A frame whose ``f_lasti`` is past this offset
    has paused and is being resumed.
    """
    return next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), 0)


class CoroutineSteps:
    """Stage 3's profile function: it sees each coroutine frame entered, and tells tracers.

    One hook serves every tracer of a crawl (``--trace`` and ``--trace-events`` together):
    Python has a single profile function per thread.
    """

    def __init__(self, tracer: Tracer, filename: str, task_name: Callable[[], str]) -> None:
        """Follow the coroutines defined in ``filename``; tell ``tracer`` of each step."""
        self.tracers = [tracer]
        self.filename = filename
        self.task_name = task_name
        self.chain: list[FrameType] = []
        self.awaited: FrameType | None = None  # the library's coroutine resumed under chain
        # An exception thrown into a task (cancel()) resumes the innermost coroutine first:
        # what the library's raised, and its name, wait here for our chain to resume.
        self.thrown: tuple[str, str] | None = None

    def ours(self, frame: FrameType | None) -> bool:
        """Tell whether a frame runs one of the coroutines this trace follows."""
        if frame is None:  # the caller of the stack's bottom frame
            return False
        code = frame.f_code
        return code.co_filename == self.filename and bool(code.co_flags & CO_COROUTINE)

    def tell(self, what: str, url: str | None) -> None:
        """Tell every tracer of one step."""
        who = self.task_name()
        for tracer in list(self.tracers):
            tracer.line(who, what, url)

    def flush(self, handed: str | None = None) -> None:
        """The chain resumed in this step is complete: tell of it, and of what it was
        handed (``None``: a Future of asyncio's own, whose value no Python frame returns)."""
        thrown, self.thrown = self.thrown, None
        if self.chain:
            waits_in = self.awaited.f_code.co_name if self.awaited else None
            if thrown and not self.awaited:
                waits_in, handed = thrown[0], handed or thrown[1]
            below = [f.f_code.co_name for f in self.chain[1:]] + [waits_in]
            url = innermost_url(self.chain, below)
            names = ">".join(f.f_code.co_name for f in self.chain)
            self.chain.clear()  # first: if the line cannot be written, it is not tried again
            self.awaited = None
            self.tell(f"{names} <- {handed}" if handed else f"{names} resumed", url)

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        """The profile function: called at each call and return of a Python frame."""
        if event == "return":
            if frame is self.awaited and not self.chain:  # thrown in: our chain resumes next
                self.thrown, self.awaited = (frame.f_code.co_name, handed_back(frame, arg)), None
            elif frame is self.awaited:  # what our innermost coroutine waited for hands back
                self.flush(handed_back(frame, arg))
            elif self.chain and frame is self.chain[-1]:  # it awaited a bare Future
                self.flush()
            return
        if event != "call":
            return
        resumed = coroutine(frame) and frame.f_lasti > first_resume(frame.f_code)
        if self.awaited is not None:
            return  # inside the library's coroutines, until they hand back to ours
        if self.ours(frame) and resumed:
            if not self.chain and coroutine(frame.f_back):
                return  # resumed under a library's coroutine (aiohttp's, a middleware): told
            self.chain.append(frame)  # resumed where it paused: one more link of this step
            return
        if (
            resumed
            and not self.ours(frame)
            and (frame.f_back is self.chain[-1] if self.chain else self.ours(frame.f_back))
        ):
            self.awaited = frame  # a library coroutine one of ours awaits: its value comes
            return
        self.flush()  # entered anything else: the chain resumed in this step is complete
        if self.ours(frame) and not coroutine(frame.f_back):  # a task's first step
            self.tell(f"{frame.f_code.co_name} started", frame.f_locals.get("url"))


def handed_back(frame: FrameType, arg: object) -> str:
    """What a library coroutine, leaving ``frame``, handed to the one of ours awaiting it.

    The profile function hears a ``return`` when a coroutine returns, raises or pauses
    again; the instruction it left at tells which.  A pause yields one of asyncio's Futures
    (or nothing, asyncio.sleep(0)): it woke, found nothing to hand back, and waits again.
    """
    op = dis.opname[frame.f_code.co_code[frame.f_lasti]]
    if op.startswith("RETURN_") and not is_future(arg):
        return summarize(arg)
    if op in ("YIELD_VALUE", "RESUME") or is_future(arg):  # 3.13 stops at the RESUME after it
        return "(waits again)"
    import asyncio  # a crawl on asyncio has it loaded

    task = asyncio.current_task()
    # A task being cancelled has CancelledError thrown in; the profile function is not told
    # which exception any other raise is.
    return "raise CancelledError" if task is not None and task.cancelling() else "raise"


def is_future(value: object) -> bool:
    """Tell whether a value is one of asyncio's Futures: what a paused coroutine yields."""
    return callable(getattr(value, "add_done_callback", None)) and hasattr(value, "_loop")


def coroutine(frame: FrameType | None) -> bool:
    """Tell whether a frame runs a coroutine: a caller that is one makes no new step."""
    return frame is not None and bool(frame.f_code.co_flags & CO_COROUTINE)


@contextmanager
def trace_coroutines(
    tracer: Tracer | None, filename: str, task_name: Callable[[], str]
) -> Iterator[None]:
    """Stage 3: trace every step of a task running a coroutine defined in ``filename``.

    asyncio's Task is written in C, so there is no step method to hook; instead a
    profile function sees each coroutine frame entered.  One step resumes the chain
    outermost first (work, then fetch, then request), so the names gather until a
    frame from elsewhere is entered, and the step is told then.  A task's first step
    enters one of our coroutines from asyncio's code: it says "started", as stage 2's
    ``<- None``.  A coroutine one of ours calls is part of its caller's step, not a new
    one, and so is one a library's coroutine calls (stage 3's middleware, from aiohttp):
    the step is told by the chain above it.  Without a tracer this does nothing; a second
    tracer joins the first's hook.
    """
    if tracer is None:
        yield
        return
    current = sys.getprofile()
    if isinstance(current, CoroutineSteps) and current.filename == filename:
        current.tracers.append(tracer)
        try:
            yield
        finally:
            current.tracers.remove(tracer)
        return
    steps = CoroutineSteps(tracer, filename, task_name)
    sys.setprofile(steps)
    try:
        yield
    finally:
        sys.setprofile(None)
        steps.flush()
