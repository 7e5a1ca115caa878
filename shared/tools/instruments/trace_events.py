"""--trace-events PATH: the crawl's event loop as a file for a real trace viewer.

Profilers and browsers share one format for "what ran when", the Chrome Trace Event
format: JSON, ``{"traceEvents": [...]}``, each event a dict with a phase ``ph``, a process
``pid``, a track ``tid`` and a time ``ts`` in microseconds.  Perfetto and Chromium's own
trace viewer open it; VizTracer writes it for asyncio programs.  A crawl becomes:

* one process per stage (``"M"`` metadata ``process_name``), so that ``nox -s show -- all
  --trace-events PATH`` puts the three crawls one above the other, each on its own clock;
* one track per actor (``thread_name``): a Fetcher in stage 1, a task in stages 2 and 3,
  and a track for the loop itself;
* each step of the loop a complete event (``"X"``, with ``dur``) on its actor's track,
  named by what ran, the URL in ``args``;
* each wait between two steps of an actor an async span (``"b"`` ... ``"e"``, one ``id``),
  its ``cat`` and colour saying what the actor waited for: a socket, the queue, a task...;
* the selector's waits as complete events on the loop track, each wake-up an instant
  (``"i"``) with how many sockets were ready; counters (``"C"``) for the ready queue and
  the fetches in flight;
* who woke whom, as flow events (``"s"`` ... ``"f"``, one ``id``, the viewer's arrows):
  from the slice in which a task was made ready to run (a step that set a future's result
  or put to the queue; the select() whose socket's callback did it; for stage 1, the
  select() that found the Fetcher's socket ready) to the step that ran because of it.

The observer hears the steps as ``--trace`` does (it is a
:class:`~shared.tools.instruments.trace.Tracer`) and adds no line to any stage: a step
ends when the next event begins (another step, or the loop going back to select()), and
the selector's select() is wrapped, for this crawl, to see the loop wait and wake.
Reading the loops' private attributes (``_ready``, ``_scheduled``, ``_fut_waiter``: stage 2
spells them as asyncio does) is fine for an instrument, never for a crawler.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from shared.tools.instruments.tasktree import task_name
from shared.tools.instruments.trace import Tracer, callback_event

if TYPE_CHECKING:
    from shared.crawling import BaseCrawler
    from shared.report import CrawlResult

LOOP_TID = 0  # the loop's own track, in every process

#: What an actor waits for -> the trace viewer's colour for it (a name Chromium's viewer
#: reserves; Perfetto colours by name instead).
COLOURS = {
    "readable": "thread_state_iowait",
    "writable": "rail_load",
    "queue": "thread_state_runnable",
    "task": "rail_animation",
    "timer": "thread_state_sleeping",
    "future": "grey",
}


def short_url(url: str | None) -> str:
    """A URL's path and query, to name a track: the host is the same all along."""
    parts = urlsplit(url or "")
    return parts.path + (f"?{parts.query}" if parts.query else "")


def waits_for(actor: Any) -> tuple[str, str]:
    """What a paused actor waits for: a kind (a key of COLOURS) and a few words.

    The future a task waits on (``_fut_waiter``, in stage 2 as in asyncio) is a
    task, or else the innermost paused frame of its chain says what the future stands for.
    """
    fut = getattr(actor, "_fut_waiter", None)
    if fut is None:
        return "future", "ready to run"
    if hasattr(fut, "_coro") or hasattr(fut, "get_coro"):  # ours, or asyncio's
        return "task", f"task {task_name(fut)}"
    frame = innermost(getattr(actor, "_coro", None) or actor.get_coro())
    where = frame.f_code.co_qualname if frame else "?"
    local = frame.f_locals if frame else {}
    if where.endswith("_when_ready"):  # stage 2's sockets.py: one socket, one event
        kind = "writable" if local.get("writable") else "readable"
        return kind, f"fd {local['sock'].fileno()} {kind}"
    if where.endswith(("connect", "handshake")):
        return "writable", where
    if where.endswith(("read", "readany", "_wait", "recv")):
        return "readable", where
    if where.endswith(("get", "join", "acquire")):
        return "queue", where
    if where.endswith("sleep"):
        return "timer", where
    return "future", where


def innermost(coro: Any) -> FrameType | None:
    """The innermost paused frame of a coroutine chain, Future.__iter__ (plumbing) aside."""
    found = None
    while coro is not None:
        frame = getattr(coro, "gi_frame", None) or getattr(coro, "cr_frame", None)
        if frame is None:
            break
        if frame.f_code.co_name not in ("__iter__", "__await__"):
            found = frame
        coro = getattr(coro, "gi_yieldfrom", None) or getattr(coro, "cr_await", None)
    return found


class TraceEvents(Tracer):
    """Keep a crawl's steps, waits and wake-ups as Trace Event dicts; :meth:`write` them."""

    def __init__(self) -> None:
        """Start with no event; each crawl watched adds a process."""
        super().__init__()
        self.events: list[dict[str, Any]] = []
        self.pid = 0
        self.tids: dict[int, int] = {}  # id(actor) -> its track, in this process
        self.keep: list[object] = []  # the actors, alive, so that no id() is reused
        self.open: dict[str, Any] | None = None  # the step still running
        self.running: object = None  # its actor
        self.waits: dict[int, tuple[int, str, str]] = {}  # tid -> (since, kind, label)
        self.span_ids = 0
        self.counters: dict[str, int] = {}
        self.in_flight = 0
        self.loop: Any = None  # the loop whose selector is wrapped
        self.selector: Any = None
        self.context: tuple[object, str | None] = (None, None)  # actor, wait kind
        # Who woke whom: the loop's ready queue, as last seen; for each task made ready and
        # not yet run, where that happened (its track and time); the last select() slice.
        self.seen_ready: set[int] = set()
        self.woken: dict[int, tuple[int, int]] = {}  # id(task) -> (tid, ts) of the waker
        self.last_select: dict[str, Any] | None = None
        self.flow_ids = 0

    # --- the clock and the tracks -----------------------------------------------------------

    def now(self) -> int:
        """Microseconds since the crawl began: the format's unit, whole for exact nesting."""
        return int((time.monotonic() - self.t0) * 1e6)

    def add(self, ph: str, name: str, tid: int, ts: int, **fields: Any) -> dict[str, Any]:
        """Add one event of this crawl's process and return it."""
        event = {"ph": ph, "name": name, "pid": self.pid, "tid": tid, "ts": ts, **fields}
        self.events.append(event)
        return event

    def meta(self, name: str, tid: int, value: str | int, key: str = "name") -> None:
        """A metadata event: a process's or a track's name or place."""
        self.add("M", name, tid, 0, args={key: value})

    def track(self, actor: object, name: str) -> int:
        """The track of an actor, named and placed on first sight."""
        tid = self.tids.get(id(actor))
        if tid is None:
            tid = self.tids[id(actor)] = len(self.tids) + 1
            self.keep.append(actor)
            self.meta("thread_name", tid, name)
            self.meta("thread_sort_index", tid, tid, "sort_index")
        return tid

    def count(self, name: str, value: int) -> None:
        """A counter's new value, on the loop's track, when it has changed."""
        if self.counters.get(name) != value:
            self.counters[name] = value
            self.add("C", name, LOOP_TID, self.now(), args={name: value})

    # --- the crawl --------------------------------------------------------------------------

    def crawl_started(self, crawler: BaseCrawler) -> None:
        """A new process for this crawl, on a clock that starts now."""
        self.finish()  # an earlier crawl left unfinished (it raised): close what it left open
        super().crawl_started(crawler)
        self.pid += 1
        self.tids, self.keep, self.waits, self.counters, self.in_flight = {}, [], {}, {}, 0
        self.seen_ready, self.woken, self.last_select = set(), {}, None
        self.meta("process_name", LOOP_TID, crawler.stage)
        self.meta("process_sort_index", LOOP_TID, self.pid, "sort_index")
        self.meta("thread_name", LOOP_TID, "event loop: select()")

    def fetch_started(self, url: str) -> None:
        """One more fetch in flight."""
        self.in_flight += 1
        self.count("fetches in flight", self.in_flight)

    def fetch_finished(self, url: str) -> None:
        """One fetch fewer in flight (a URL skipped before it began was never counted)."""
        self.in_flight = max(0, self.in_flight - 1)
        self.count("fetches in flight", self.in_flight)

    def crawl_finished(self, result: CrawlResult) -> None:
        """Close the last step and every wait still open; put the selector back."""
        super().crawl_finished(result)
        self.finish()

    def finish(self) -> None:
        """Close what is open at the end of a crawl (also an interrupted one)."""
        if self.pid == 0:
            return
        self.close_step()
        end = self.now()
        for tid, (since, kind, label) in self.waits.items():
            if label != "?":  # a Fetcher never woken again was done: it waited for nothing
                self.span(tid, since, end, kind, label)
        self.waits = {}
        if self.selector is not None:
            del self.selector.select  # the instance's wrapper: the class's select() again
            self.selector = self.loop = None

    # --- the steps --------------------------------------------------------------------------

    def callback(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Stage 1: a callback runs for its Fetcher, and its event says what it waited for."""
        who, event = callback_event(args)
        self.context = (getattr(callback, "__self__", None), "timer" if who == "timer" else event)
        super().callback(callback, args)

    def resume(self, task: Any, value: Any) -> None:
        """Stage 2: a task resumes."""
        self.context = (task, None)
        super().resume(task, value)

    def header(self, callbacks: bool) -> None:
        """No header: the steps go to a file of events, not to lines of text."""

    def line(self, who: str, what: str, url: str | None = None) -> None:
        """A step begins: close the previous one, end its actor's wait, open this one."""
        actor, kind = self.context
        self.context = (None, None)
        if actor is None and kind is None:  # stage 3: the running asyncio task
            actor = sys.modules["asyncio"].current_task()
        self.watch_selector()
        self.close_step()
        self.note_wakeups(self.last_select)  # callbacks since: the sockets select() found
        ts = self.now()
        if actor is None:  # a callback of the loop's own (Ctrl-C's): on the loop's track
            tid = LOOP_TID
        else:
            name = who if kind is None else f"{type(actor).__name__} {short_url(url)}"
            tid = self.track(actor, name)
        if (wait := self.waits.pop(tid, None)) is not None:
            since, waited, label = wait
            if kind is not None:  # stage 1 learns only now what the Fetcher waited for
                waited, label = kind, f"{who} {kind}"
            self.span(tid, since, ts, waited, label)
        self.count("ready queue", self.ready())
        name = what.split(" <- ")[0]  # stage 2's step without the value it was resumed with
        args = {"what": what, "url": url}
        waker = self.woken.pop(id(actor), None)
        if kind in ("readable", "writable") and self.last_select is not None:
            waker = self.last_select["tid"], self.inside(self.last_select, ts)
        self.open = self.add("X", name, tid, ts, dur=0, cat="step", args=args)
        self.running = actor
        if waker is not None and tid != LOOP_TID:
            self.flow(waker, (tid, ts))

    def close_step(self) -> None:
        """The running step ends now; its actor now waits, for what its paused chain says."""
        if self.open is None:
            return
        ts = self.now()
        self.open["dur"] = ts - self.open["ts"]
        self.note_wakeups(self.open)  # the tasks this step made ready
        tid, self.open = self.open["tid"], None
        done = getattr(self.running, "done", None)
        if tid != LOOP_TID and not (done and done()):  # a task that has ended waits no more
            kind, label = ("future", "?") if self.running is None else self.waiting(self.running)
            self.waits[tid] = (ts, kind, label)

    def waiting(self, actor: Any) -> tuple[str, str]:
        """What an actor just paused waits for; stage 1's Fetcher tells only when woken."""
        if not hasattr(actor, "_coro") and not hasattr(actor, "get_coro"):
            return "future", "?"
        try:
            return waits_for(actor)
        except Exception:  # a chain in a shape not foreseen: an unnamed wait, never a failure
            return "future", "?"

    def note_wakeups(self, source: dict[str, Any] | None) -> None:
        """Note the tasks made ready to run since the last look, by the slice ``source``.

        A task is made ready when a handle of its own (its step, its wake-up) joins the
        loop's ready queue: a future's result was set, the queue was put to, a task began.
        """
        ready = list(getattr(self.loop, "_ready", ()))
        for handle in ready:
            if id(handle) in self.seen_ready or source is None:
                continue
            callback = getattr(handle, "fn", None) or getattr(handle, "_callback", None)
            task = getattr(callback, "__self__", None)
            if hasattr(task, "_coro") or hasattr(task, "get_coro"):  # stage 2's, asyncio's
                self.woken[id(task)] = (source["tid"], self.inside(source, self.now()))
        self.seen_ready = {id(handle) for handle in ready}

    @staticmethod
    def inside(event: dict[str, Any], ts: int) -> int:
        """A time within a slice, where a flow may start from it: the viewer binds a flow's
        start to the slice that encloses it on its track."""
        return int(max(event["ts"], min(ts, event["ts"] + event.get("dur", 0) - 1)))

    def flow(self, start: tuple[int, int], end: tuple[int, int]) -> None:
        """An arrow from a waker's slice (track, time) to the step it caused (which begins
        at that time: ``bp`` "e" binds the end to the slice that encloses it)."""
        self.flow_ids += 1
        fields = {"cat": "wake-up", "id": self.flow_ids}
        self.add("s", "wake-up", start[0], start[1], **fields)
        self.add("f", "wake-up", end[0], end[1], bp="e", **fields)

    def span(self, tid: int, begin: int, end: int, kind: str, label: str) -> None:
        """An async span: an actor waited from begin to end, for a kind of thing."""
        self.span_ids += 1
        fields = {"cat": kind, "id": self.span_ids, "cname": COLOURS[kind]}
        self.add("b", label, tid, begin, **fields, args={"waits for": kind})
        self.add("e", label, tid, end, **fields)

    # --- the loop ---------------------------------------------------------------------------

    def ready(self) -> int:
        """Callbacks in the loop's ready queue (stage 1: timers already due)."""
        loop = self.loop
        if hasattr(loop, "_ready"):
            return len(loop._ready)
        if not hasattr(loop, "_scheduled"):  # a loop of another shape (a student's): no count
            return 0
        now = loop.time()
        return sum(
            1 for when, _, handle in loop._scheduled if when <= now and not handle.cancelled()
        )

    def watch_selector(self) -> None:
        """At a crawl's first step, wrap its loop's select() to see the loop wait and wake."""
        if self.selector is not None:
            return
        loop = running_loop()
        selector = getattr(loop, "selector", None) or getattr(loop, "_selector", None)
        if selector is None:
            return
        original = selector.select

        def select(timeout: float | None = None) -> Any:
            self.close_step()  # the turn's callbacks are done: the loop waits now
            self.note_wakeups(self.last_select)
            begin = self.now()
            ready = original(timeout)
            end = self.now()
            waited = "forever" if timeout is None else f"{timeout:.6f} s"
            self.last_select = self.add("X", "select", LOOP_TID, begin, dur=end - begin,
                cat="loop", args={"timeout": waited, "ready": len(ready)})  # fmt: skip
            self.add("i", "wake-up", LOOP_TID, end, s="t", args={"sockets ready": len(ready)})
            return ready

        selector.select = select  # this selector's only: the class keeps its own
        self.loop, self.selector = loop, selector

    # --- the file ---------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The trace, as the format wants it at its top level."""
        return {"traceEvents": self.events, "displayTimeUnit": "ms"}

    def write(self, path: str) -> int:
        """Write the trace to path (what was recorded so far); return its size in bytes."""
        self.finish()
        text = json.dumps(self.to_json(), separators=(",", ":"))
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # out/ on a fresh clone
        Path(path).write_text(text, encoding="utf-8")
        return len(text)


def running_loop() -> Any:
    """The event loop running now: asyncio's, or the hand-made one whose run_once is on the
    stack (stages 1 and 2 keep theirs in no place a tool could import)."""
    if (asyncio := sys.modules.get("asyncio")) is not None:  # only stage 3 loads it
        with contextlib.suppress(RuntimeError):
            return asyncio.get_running_loop()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "run_once" and "self" in frame.f_locals:
            return frame.f_locals["self"]
        frame = frame.f_back
    return None
