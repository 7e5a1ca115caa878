"""--trace: one line per step of the event loop, in one format for every stage.

Each line reads ``time  who  what  url``: when the step ran (seconds since the
crawl began), who ran (a socket's file descriptor in stage 1, a task in stages 2 and
3), what ran (the callback, or the chain of coroutines resumed) and for which URL.
On a tiny site with ``--max-tasks 2`` the lines show fetches interleaving: one fetch
pauses, another runs, the first resumes.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TextIO

from shared.interrupt import PipeClosed


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
    these frames.
    """
    names: list[str] = []
    url = None
    while coro is not None:
        frame = getattr(coro, "gi_frame", None) or getattr(coro, "cr_frame", None)
        if frame is None:
            break
        if frame.f_code.co_name != "__iter__":  # Future.__iter__ is plumbing, not a step
            names.append(frame.f_code.co_name)
        url = frame.f_locals.get("url", url)
        coro = getattr(coro, "gi_yieldfrom", None) or getattr(coro, "cr_await", None)
    return names, url


class Tracer:
    """Print trace lines to a stream (stderr by default)."""

    def __init__(self, out: TextIO | None = None) -> None:
        """Start the clock; lines go to ``out``."""
        self.out = out or sys.stderr
        self.t0 = time.monotonic()
        self.closed = False  # set once nobody reads the lines any more

    def line(self, who: str, what: str, url: str | None = None) -> None:
        """Print one step: who ran, what it ran, for which URL.

        Raises PipeClosed, once, when the reader has gone (``--trace 2>&1 | head``).
        """
        if self.closed:
            return
        elapsed = time.monotonic() - self.t0
        try:
            print(f"{elapsed:8.4f}  {who:<16} {what:<44} {url or '-'}", file=self.out)
        except BrokenPipeError:
            self.closed = True
            raise PipeClosed(f"trace output closed at {elapsed:.4f} s") from None

    def callback(self, who: str, event: str, callback: Callable[..., object]) -> None:
        """Stage 1: a callback ran; its object (a Fetcher) knows the URL."""
        name = getattr(callback, "__name__", repr(callback))
        url = getattr(getattr(callback, "__self__", None), "url", None)
        self.line(who, f"{event} -> {name}", url)

    def resume(self, who: str, coro: Any, value: Any) -> None:
        """Stage 2: a task resumes its coroutine with a value or an exception."""
        names, url = coroutine_chain(coro)
        self.line(who, f"{'>'.join(names)} <- {summarize(value)}", url)


@contextmanager
def trace_coroutines(
    tracer: Tracer | None, filename: str, task_name: Callable[[], str]
) -> Iterator[None]:
    """Stage 3: trace every resumption of a coroutine defined in ``filename``.

    asyncio's Task is written in C, so there is no step method to hook; instead a
    profile function sees each coroutine frame resumed.  One step resumes the chain
    outermost first (work, then fetch, then request), so the names gather until a
    frame from elsewhere is entered, and the step is printed then.  Without a tracer
    this does nothing.
    """
    if tracer is None:
        yield
        return
    chain: list[FrameType] = []

    def flush() -> None:
        if chain:
            urls = [f.f_locals["url"] for f in chain if "url" in f.f_locals]
            names = ">".join(f.f_code.co_name for f in chain)
            chain.clear()  # first: if the line cannot be written, it is not tried again
            tracer.line(task_name(), f"{names} resumed", urls[-1] if urls else None)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        resumed = frame.f_lasti > 0 and frame.f_code.co_flags & inspect.CO_COROUTINE
        if resumed and frame.f_code.co_filename == filename:
            chain.append(frame)
        else:
            flush()

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        flush()
