"""The running loop, kept apart as in asyncio's events.py: so no module imports in a circle."""

from typing import TYPE_CHECKING

# For the annotations only: at run time this module imports nothing of stage 2.
if TYPE_CHECKING:
    from .loop import EventLoop

# asyncio keeps the running loop per thread. We have one thread and one loop at a time, so a
# module global is enough: Futures and Tasks use it to reach call_soon without a loop being
# passed to each of them. Ours counts as running from its making until close(), so that the
# crawl can make its main Task before run_until_complete (asyncio.run makes both at once).
_running_loop: "EventLoop | None" = None


def get_running_loop() -> "EventLoop":
    """Return the running event loop; RuntimeError if there is none, as asyncio's does."""
    if _running_loop is None:  # never one made on the quiet, as get_event_loop() once did
        raise RuntimeError("no running event loop: make an EventLoop() first")
    return _running_loop


def _set_running_loop(loop: "EventLoop | None") -> None:
    global _running_loop
    _running_loop = loop
