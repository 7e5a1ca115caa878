"""Record every step of a crawl's event loop as data, for the step-through page.

:class:`Recorder` is ``--trace``'s :class:`~shared.tools.instruments.trace.Tracer`, an
observer of the crawl (shared/observe.py): it hears every step of the loop (stage 1's loop
running a callback, stage 2's ``Task._step``, stage 3's profile hook in
:func:`~shared.tools.instruments.trace.trace_coroutines`), and instead of printing a line
it keeps what ran, why, the chain of frames with their line numbers, and the state of the
loop at that moment.

The loop's state is read by looking at the loop from here, not by hooks in the stages:
every stage is a lesson that must stay short.  That means reading private attributes
(``EventLoop._scheduled``, ``Task._fut_waiter``, asyncio's ``_ready`` and ``_fut_waiter``):
acceptable for a visualisation, which may break with them, and never for a crawler.
A recorder bug must not change the crawl it watches, so errors are collected in
:attr:`Recorder.errors` and reported once the crawl is over.
"""

from __future__ import annotations

import abc
import asyncio
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from inspect import CO_COROUTINE
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TextIO
from urllib.parse import urlsplit

from shared.tools.instruments import tasktree, watching
from shared.tools.instruments.trace import Tracer, callback_event, coroutine_chain, summarize

ROOT = Path(__file__).resolve().parents[3]  # the checkout: paths are shown from here

# What an actor waits for, as drawn on the page: the bar's colour follows the kind.
OTHER, READABLE, WRITABLE, QUEUE, TASK, TIMER = range(6)
KINDS = ["future", "readable", "writable", "queue", "task", "timer"]

#: One frame of a step's chain: function name, file (from the checkout), line, last line.
#: The last line is the line itself, except for a stage 1 callback: the whole function runs.
Frame = tuple[str, str, int, int]


#: What a stage's Look tells of a step: actor, frames, a detail, what the actor waited for.
StepFacts = tuple[int, tuple[Frame, ...], str, tuple[int, str] | None]


@dataclass(frozen=True)
class State:
    """The loop at one moment: hashable, so that a state repeated is stored once.

    ``sockets`` holds (fd, "r", "w" or "rw", actor index or -1, what will run) and
    ``waits`` (actor index, kind, what it waits for), both sorted.
    """

    ready: int  # callbacks in the ready queue (stage 1: timers already due)
    timers: int  # timers pending, cancelled ones left out
    next_timer_ms: int  # when the next one is due, from now; -1 with no timer
    sockets: tuple[tuple[int, str, int, str], ...]
    waits: tuple[tuple[int, int, str], ...]


@dataclass
class Step:
    """One step of the loop: who ran, what, for which URL, where in the code."""

    t: float  # seconds since the crawl began
    actor: int
    what: str  # as --trace prints it: "readable -> _on_readable", "work>get <- None"
    url: str | None
    frames: tuple[Frame, ...]  # outermost first
    state: int  # index into Recorder.states: the loop as this step began
    first: bool  # the actor's first step
    detail: str  # stage 1: "fd 8 readable"; stage 2: what it was resumed with
    waited: tuple[int, str] | None  # (kind, label): what the actor waited for until now
    tree: tuple[str, ...] = ()  # where every task waits: tasktree.py's lines


@dataclass
class Actor:
    """Who a step runs for: a Fetcher in stage 1, a task in stages 2 and 3."""

    name: str  # "worker-0", "robots.txt", "Fetcher"
    detail: str  # the URL's path, for actors that exist for one URL
    obj: object = field(repr=False)  # kept alive, so that its id() is never reused


def short_url(url: str | None) -> str:
    """A URL's path and query: the host is the same for every step of a crawl."""
    if not url:
        return ""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def shown_path(filename: str) -> str:
    """A source file's path from the checkout (stage2_generators/tasks.py), else its name."""
    path = Path(filename)
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def closure_value(fn: object, name: str) -> Any:
    """The value of a closure's free variable ``name``, or None: how a callback knows its future."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None)
    if code is None or cells is None or name not in code.co_freevars:
        return None
    return cells[code.co_freevars.index(name)].cell_contents


def last_line(code: CodeType) -> int:
    """The last line a function's code covers."""
    return max((line for _, _, line in code.co_lines() if line is not None), default=0)


class Recorder(Tracer):
    """A Tracer that keeps each step as data instead of printing it.

    ``echo`` also prints the ``--trace`` lines to that stream, in their usual format.
    """

    def __init__(self, package: str, echo: TextIO | None = None) -> None:
        """Record a crawl by the stage ``package`` (stage1_callbacks, ...)."""
        super().__init__(echo)
        self.echo = echo is not None
        self.package = package
        self.look: Look = LOOKS[package](self)
        self.crawler: Any = None  # the Crawler being watched, once its crawl has started
        self.steps: list[Step] = []
        self.actors: list[Actor] = []
        self.states: list[State] = []
        self.errors: list[str] = []  # tracebacks of the recorder's own failures
        self._actor_ids: dict[int, int] = {}  # id(obj) -> index in actors
        self.stepped: set[int] = set()  # the actors that have had a step
        self.seen_waiting: dict[int, tuple[int, str]] = {}  # actor -> its wait, last seen
        self._state_ids: dict[State, int] = {}
        self._context: tuple[Any, ...] = ()  # what callback() or resume() saw, for line()

    def crawl_started(self, crawler: Any) -> None:
        """Watch this crawler's loop; the clock starts now, as a Tracer's does."""
        self.crawler = crawler
        super().crawl_started(crawler)

    def header(self, callbacks: bool) -> None:
        """Name the columns only where the ``--trace`` lines are echoed."""
        if self.echo:
            super().header(callbacks)

    def actor(self, obj: object, name: str, url: str | None = None) -> int:
        """The index of ``obj``'s actor, made on first sight."""
        index = self._actor_ids.get(id(obj))
        if index is None:
            index = self._actor_ids[id(obj)] = len(self.actors)
            self.actors.append(Actor(name, short_url(url), obj))
        return index

    def known(self, obj: object) -> int:
        """The index of ``obj``'s actor, or -1 if it has none yet."""
        return self._actor_ids.get(id(obj), -1)

    def callback(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Stage 1: the loop is about to run a callback."""
        self._context = ("callback", *callback_event(args), callback)
        super().callback(callback, args)

    def resume(self, task: Any, value: Any) -> None:
        """Stage 2: a task is about to resume its coroutine."""
        self._context = ("resume", task.name, task, task._coro, value)
        super().resume(task, value)

    def line(self, who: str, what: str, url: str | None = None) -> None:
        """Record one step; stage 3 calls this directly, stages 1 and 2 through the above."""
        t = time.monotonic() - self.t0
        context, self._context = self._context, ()
        try:
            state = self.state(self.look.snapshot(context))
            for actor, kind, label in self.states[state].waits:
                if label not in ("running", "ready to run"):
                    self.seen_waiting[actor] = (kind, label)
            actor, frames, detail, waited = self.look.step(context, who)
            # What the actor waited for, if the stage cannot tell: how it was last seen
            # waiting (by a step of another actor, since its own previous step).
            seen = self.seen_waiting.pop(actor, None)
            first = actor not in self.stepped
            self.stepped.add(actor)
            if first and url:  # a task that exists for one URL ("robots.txt") is named by it
                self.actors[actor].detail = short_url(url)
            waited = None if first else waited or seen
            tree = self.look.tree()
            self.steps.append(Step(t, actor, what, url, frames, state, first, detail, waited, tree))
        except Exception:  # never let the picture change the crawl: report it afterwards
            self.errors.append(traceback.format_exc())
        if self.echo:
            super().line(who, what, url)

    def state(self, state: State) -> int:
        """The index of a state, stored once however often the loop is in it."""
        index = self._state_ids.get(state)
        if index is None:
            index = self._state_ids[state] = len(self.states)
            self.states.append(state)
        return index


class Look(abc.ABC):
    """How to read one stage's loop: who a step is for, its frames, the loop's state."""

    def __init__(self, recorder: Recorder) -> None:
        """Look at the loops the recorder's crawler runs."""
        self.rec = recorder
        self.folder = ROOT / recorder.package

    def ours(self, filename: str) -> bool:
        """Tell whether a source file belongs to the stage (its code is shown on the page)."""
        return Path(filename).resolve().parent == self.folder

    def frame(self, frame: FrameType, name: str | None = None) -> Frame:
        """One frame of a chain, at the line it is paused at or running."""
        line = frame.f_lineno or frame.f_code.co_firstlineno
        return (name or frame.f_code.co_name, shown_path(frame.f_code.co_filename), line, line)

    @abc.abstractmethod
    def step(self, context: tuple[Any, ...], who: str) -> StepFacts:
        """Return the step's actor, its frames (outermost first), a detail, and what the
        actor waited for until this step if the stage can tell (else None)."""

    @abc.abstractmethod
    def snapshot(self, context: tuple[Any, ...]) -> State:
        """Return the loop's state now, as the step ``context`` begins."""

    def tree(self) -> tuple[str, ...]:
        """The tree of tasks now, as a crawl prints it on SIGUSR1 (none in stage 1)."""
        return ()

    @staticmethod
    def timers(handles: list[Any], when: Callable[[Any], float], now: float) -> tuple[int, int]:
        """Count the timers pending and say in how many milliseconds the next is due."""
        due = [when(handle) for handle in handles]
        return len(due), round((min(due) - now) * 1000) if due else -1


class Stage1Look(Look):
    """Stage 1: an actor is a Fetcher, known from its callbacks (bound methods)."""

    def step(self, context: tuple[Any, ...], who: str) -> StepFacts:
        """A callback's step: the Fetcher it is bound to, and the callback's whole code."""
        _, who, event, callback = context
        owner = getattr(callback, "__self__", None)
        actor = self.fetcher(owner) if owner is not None else self.rec.actor(callback, "loop")
        code = getattr(getattr(callback, "__func__", callback), "__code__", None)
        frames: tuple[Frame, ...] = ()
        if code is not None:
            path = shown_path(code.co_filename)
            name = getattr(callback, "__qualname__", code.co_name)
            frames = ((name, path, code.co_firstlineno, last_line(code)),)
        kind = TIMER if who == "timer" else READABLE if event == "readable" else WRITABLE
        name = getattr(callback, "__name__", "?")
        waited = (kind, f"{'timer' if kind == TIMER else f'{who} {event}'} -> {name}")
        return actor, frames, f"{who} {event}", waited

    def fetcher(self, fetcher: Any) -> int:
        """The actor of a Fetcher (or of any object a callback is bound to)."""
        return self.rec.actor(fetcher, type(fetcher).__name__, getattr(fetcher, "url", None))

    def snapshot(self, context: tuple[Any, ...]) -> State:
        """Sockets and their callbacks, the timer heap, and what each Fetcher waits for."""
        loop = getattr(self.rec.crawler, "loop", None)
        if loop is None:
            return State(0, 0, -1, (), ())
        now = loop.time()
        handles = [handle for _, _, handle in loop._scheduled if not handle.cancelled()]
        timers, next_ms = self.timers(handles, lambda h: h.when, now)
        ready = sum(1 for handle in handles if handle.when <= now)  # call_soon is a timer
        sockets = []
        fetchers = {id(f) for f in getattr(self.rec.crawler, "fetchers", {}).values()}
        for key in loop.selector.get_map().values():
            fd = key.fd
            # A Fetcher's socket is its actor's; the loop's own (Ctrl-C's, the name lookups'
            # wake-up) belong to no actor.
            owner = getattr(key.data, "__self__", None)
            actor = self.fetcher(owner) if id(owner) in fetchers else -1
            name = getattr(key.data, "__name__", "?")
            sockets.append((fd, events(key.events), actor, name))
        waits = []
        for fetcher in getattr(self.rec.crawler, "fetchers", {}).values():
            actor = self.fetcher(fetcher)
            key = loop.selector.get_map().get(fetcher.sock) if fetcher.sock else None
            if key is not None:
                kind = READABLE if events(key.events) == "r" else WRITABLE
                label = f"fd {key.fd} {KINDS[kind]} -> {getattr(key.data, '__name__', '?')}"
                waits.append((actor, kind, label))
            elif fetcher.timer is not None and not fetcher.timer.cancelled():
                waits.append((actor, TIMER, f"timer -> {fetcher.timer.callback.__name__}"))
        return State(ready, timers, next_ms, tuple(sorted(sockets)), tuple(sorted(waits)))


def events(mask: int) -> str:
    """A selector's event mask as "r", "w" or "rw"."""
    return ("r" if mask & 1 else "") + ("w" if mask & 2 else "")  # EVENT_READ, EVENT_WRITE


class Stage2Look(Look):
    """Stage 2: an actor is a Task; what it waits for, its innermost paused generator says."""

    def __init__(self, recorder: Recorder) -> None:
        """Keep the tasks seen so far: stage 2's loop has no list of them."""
        super().__init__(recorder)
        self.tasks: dict[int, Any] = {}  # id -> Task, while not done

    def step(self, context: tuple[Any, ...], who: str) -> StepFacts:
        """A task's step: the chain of generators it resumes, down to where it paused."""
        _, who, task, coro, value = context
        _, url = coroutine_chain(coro)
        self.tasks[id(task)] = task
        frames = [
            self.frame(frame)
            for frame in generator_frames(coro)
            if frame.f_code.co_name != "__iter__"  # Future.__iter__ is plumbing, as in --trace
        ]
        # Where the coroutine paused says what it waited for: Task._step has just let go
        # of the future (_fut_waiter is None), but Future.__iter__ still holds it as self.
        paused = list(generator_frames(coro))
        at_future = paused and paused[-1].f_code.co_name == "__iter__"
        fut = paused[-1].f_locals.get("self") if at_future else None
        waited = self.waits_for(fut, paused_in(coro)) if fut is not None else None
        return self.rec.actor(task, who, url), tuple(frames), summarize(value), waited

    def snapshot(self, context: tuple[Any, ...]) -> State:
        """Sockets, the ready queue, the timers, and what each task waits for."""
        from stage2_generators import events as stage2_events

        loop = stage2_events._running_loop  # not get_running_loop(): that raises without one
        if loop is None or loop._selector.get_map() is None:
            return State(0, 0, -1, (), ())
        running = context[2] if context else None
        if running is not None:
            self.tasks[id(running)] = running
        self.tasks = {key: task for key, task in self.tasks.items() if not task.done()}
        owners = {}  # id(future) -> the task whose _when_ready waits for it
        waits = []
        for task in self.tasks.values():
            frame = paused_in(task._coro)
            if frame is not None and frame.f_code.co_name == "_when_ready":
                owners[id(frame.f_locals.get("fut"))] = task
            actor = self.rec.actor(task, task.name)
            if task._fut_waiter is None:
                label = "running" if task is running else "ready to run"
                waits.append((actor, OTHER, label))
            else:
                waits.append((actor, *self.waits_for(task._fut_waiter, frame)))
        sockets = []
        for key in loop._selector.get_map().values():
            fd = key.fd
            for callback, mode in zip(key.data, "rw", strict=True):
                if callback is not None:
                    # _when_ready's on_ready knows its future, and the future its task.
                    fut = closure_value(callback, "fut")
                    owner = owners.get(id(fut)) if fut is not None else None
                    actor = self.rec.known(owner) if owner is not None else -1
                    sockets.append((fd, mode, actor, getattr(callback, "__name__", "?")))
        handles = [handle for _, _, handle in loop._scheduled if not handle._cancelled]
        timers, next_ms = self.timers(handles, lambda h: h.when, time.monotonic())
        return State(
            len(loop._ready), timers, next_ms, tuple(sorted(sockets)), tuple(sorted(waits))
        )

    def waits_for(self, fut: Any, frame: FrameType | None) -> tuple[int, str]:
        """What a paused task waits for: its future, told by the generator that made it."""
        if hasattr(fut, "_coro"):  # a Task: `yield from worker`, robots.txt
            return TASK, f"task {self.name(fut)}"
        name = frame.f_code.co_name if frame else "?"
        local = frame.f_locals if frame else {}
        if name == "_when_ready":
            kind = WRITABLE if local["writable"] else READABLE
            return kind, f"fd {local['sock'].fileno()} {KINDS[kind]}"
        if name in ("get", "join"):
            return QUEUE, f"the queue: {name}"
        if name == "sleep":
            return TIMER, "a timer (sleep)"
        return OTHER, f"a Future in {name}"

    def tree(self) -> tuple[str, ...]:
        """The tree of the tasks seen and not done, from the main task down."""
        tasks = [task for task in self.tasks.values() if not task.done()]
        return tuple(tasktree.lines(tasks, tasktree.generator_waits_for))

    def name(self, task: Any) -> str:
        """A task's name, with its URL's path when it has one ("robots.txt /robots.txt")."""
        index = self.rec.known(task)
        detail = (
            self.rec.actors[index].detail
            if index >= 0
            else short_url(coroutine_chain(task._coro)[1])
        )
        return f"{task.name} {detail}".strip()


def generator_frames(coro: Any) -> Iterator[FrameType]:
    """The frames of a ``yield from`` chain of generators, outermost first."""
    while coro is not None and (frame := getattr(coro, "gi_frame", None)) is not None:
        yield frame
        coro = getattr(coro, "gi_yieldfrom", None)


def paused_in(coro: Any) -> FrameType | None:
    """The innermost generator of a chain, Future.__iter__ aside: where the task waits."""
    frames = [f for f in generator_frames(coro) if f.f_code.co_name != "__iter__"]
    return frames[-1] if frames else None


class Stage3Look(Look):
    """Stage 3: an actor is an asyncio Task; the frames are on the running stack."""

    def __init__(self, recorder: Recorder) -> None:
        """Look for frames of the stage's crawler.py, the file trace_coroutines follows."""
        super().__init__(recorder)
        self.filename = str(self.folder / "crawler.py")
        self.last: dict[int, tuple[Frame, ...]] = {}  # actor -> the frames of its last step

    def step(self, context: tuple[Any, ...], who: str) -> StepFacts:
        """A step of the current task: our coroutine frames on the stack, outermost first."""
        # trace_coroutines reports from its profile hook, in the middle of the step: the
        # coroutines it resumed are running, so their frames are on the stack, below us.
        ours = [f for f in walk(sys._getframe(1)) if self.coroutine(f)]
        url = next((f.f_locals["url"] for f in ours if "url" in f.f_locals), None)
        actor = self.rec.actor(asyncio.current_task(), self.name(asyncio.current_task()), url)
        frames = tuple(self.frame(f) for f in reversed(ours))
        if not frames:
            # A coroutine ended by the exception thrown in (a worker cancelled at q.get())
            # has left the stack before the step is reported: it resumed where it paused.
            frames = self.last.get(actor, ())
        self.last[actor] = frames
        return actor, frames, "started" if actor not in self.rec.stepped else "resumed", None

    @staticmethod
    def name(task: Any) -> str:
        """A task's name, as stage 2's: asyncio.run's main task is "crawl", not "Task-3"."""
        return tasktree.task_name(task)

    def tree(self) -> tuple[str, ...]:
        """The tree of the loop's tasks, from the main task down."""
        tasks = list(asyncio.all_tasks(asyncio.get_running_loop()))
        return tuple(tasktree.lines(tasks, tasktree.asyncio_waits_for))

    def coroutine(self, frame: FrameType) -> bool:
        """Tell whether a frame runs one of the stage's coroutines (as trace_coroutines does)."""
        code = frame.f_code
        return code.co_filename == self.filename and bool(code.co_flags & CO_COROUTINE)

    def snapshot(self, context: tuple[Any, ...]) -> State:
        """asyncio's selector, ready queue and timer heap; each task's ``_fut_waiter``."""
        loop = asyncio.get_running_loop()
        selector = getattr(loop, "_selector", None)
        sockets = []
        self_pipe = getattr(getattr(loop, "_ssock", None), "fileno", lambda: -1)()
        for fd, key in (selector.get_map() if selector else {}).items():
            for handle, mode in zip(key.data, "rw", strict=True):
                if handle is not None:
                    callback = getattr(handle, "_callback", None)
                    name = getattr(callback, "__qualname__", "?")
                    name = "self-pipe: wakes the loop" if fd == self_pipe else name
                    sockets.append((fd, mode, -1, name))
        handles = [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]
        timers, next_ms = self.timers(handles, lambda h: h.when(), loop.time())
        queue = getattr(self.rec.crawler, "q", None)
        getters = {id(f) for f in getattr(queue, "_getters", ())}
        joiners = {id(f) for f in getattr(getattr(queue, "_finished", None), "_waiters", ())}
        current = asyncio.current_task()
        waits = []
        for task in asyncio.all_tasks(loop):
            actor = self.rec.actor(task, self.name(task))
            fut = getattr(task, "_fut_waiter", None)
            if fut is None:
                waits.append((actor, OTHER, "running" if task is current else "ready to run"))
            elif isinstance(fut, asyncio.Task):
                waits.append((actor, TASK, f"task {self.name(fut)}"))
            elif id(fut) in getters:
                waits.append((actor, QUEUE, "the queue: get"))
            elif id(fut) in joiners:
                waits.append((actor, QUEUE, "the queue: join"))
            elif type(fut).__name__ == "_GatheringFuture":
                waits.append((actor, TASK, "gather: the workers to end"))
            else:
                where = innermost(task.get_coro())
                kind, what = ASYNCIO_WAITS.get(where, (OTHER, "a future"))
                waits.append((actor, kind, f"{what} ({where})"))
        ready = len(getattr(loop, "_ready", ()))
        return State(ready, timers, next_ms, tuple(sorted(sockets)), tuple(sorted(waits)))


# Where asyncio and aiohttp park a task, by the innermost coroutine's qualified name, and
# what the future stands for there.  Elsewhere the page shows the name alone.
ASYNCIO_WAITS = {
    "BaseSelectorEventLoop.sock_connect": (WRITABLE, "the socket connects"),
    "DataQueue.read": (READABLE, "data from the socket"),
    "StreamReader._wait": (READABLE, "data from the socket"),
    "StreamReader.readany": (READABLE, "data from the socket"),
}


def walk(frame: FrameType | None) -> Iterator[FrameType]:
    """A frame and its callers, innermost first."""
    while frame is not None:
        yield frame
        frame = frame.f_back


def innermost(coro: Any) -> str:
    """The innermost coroutine of an ``await`` chain, by qualified name: where a task waits."""
    name = "?"
    while coro is not None:
        code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
        if code is not None:
            name = code.co_qualname
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return name


LOOKS: dict[str, type[Look]] = {
    "stage1_callbacks": Stage1Look,
    "stage2_generators": Stage2Look,
    "stage3_asyncio": Stage3Look,
}


@contextmanager
def recording(package: str, echo: TextIO | None = None) -> Iterator[Recorder]:
    """Within this block, a crawl by ``package``'s ``crawl()`` is recorded.

    The recorder watches as every observer does (shared/observe.py): a crawl that begins
    in the block tells it each step, and nothing of the stage is replaced.
    """
    recorder = Recorder(package, echo)
    with watching(recorder):
        yield recorder
