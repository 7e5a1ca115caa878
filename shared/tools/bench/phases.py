"""A crawl's fetches told apart by phase over time: queued, connecting, reading.

The JSON a crawler writes with ``--timeline`` has two lists, one entry per URL recorded,
in the same order: ``timeline``, ``[url, start, end]``, and ``phases``, ``[url, queued,
connected]`` (see shared/report.py).  Together they cut each fetch's life in three:

* queued, from ``queued`` to ``start``: found (or a root), not begun.  It waits for a
  worker (a free --max-tasks slot), its host's --max-per-host slot or its origin's
  robots.txt.  It costs a queue entry, not a connection: it is not in flight.
* connecting, from ``start`` to ``connected``: begun, with no connection yet.  The
  --delay wait, the name look-up, the connect itself, and any earlier tries that failed.
* reading, from ``connected`` to ``end``: the last try's connection is made; the request
  goes out and the crawler waits for the response, then receives it.

A fetch without ``connected`` (every try failed to connect, or robots.txt forbade it)
is connecting until its end.  A JSON without ``phases`` (written before they existed)
tells only start and end: :func:`has_connect_times` says so, and a picture then draws
such a crawl's fetches in flight undivided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

Timeline = Sequence[Sequence[Any]]  # [url, start, end] per fetch
Phases = Sequence[Sequence[Any]]  # [url, queued, connected or None] per fetch


class PhaseStep(NamedTuple):
    """How many fetches were in each phase from ``time`` until the next step."""

    time: float
    queued: int
    connecting: int
    reading: int

    @property
    def in_flight(self) -> int:
        """Begun and not ended: connecting or reading."""
        return self.connecting + self.reading


def has_connect_times(phases: Phases) -> bool:
    """Tell whether a crawl recorded when its connections were made (any at all)."""
    return any(entry[2] is not None for entry in phases)


def phase_steps(timeline: Timeline, phases: Phases = ()) -> list[PhaseStep]:
    """Return the phase counts as a step function: one PhaseStep per instant anything changed.

    The first step is at 0.0.  Changes at the same instant are taken together, so a
    fetch that ends as another begins never counts twice, and a phase that lasts no
    time (a URL begun the moment it was found) never shows.  A timeline entry with no
    phases entry was queued and connected at no known time: it is connecting throughout.
    """
    known = {str(url): (queued, connected) for url, queued, connected in phases}
    # (time, change in queued, change in connecting, change in reading)
    changes: list[tuple[float, int, int, int]] = []
    for url, start_, end_ in timeline:
        start, end = float(start_), float(end_)
        queued, connected = known.get(str(url), (None, None))
        queued_at = start if queued is None else min(float(queued), start)
        changes += [(queued_at, 1, 0, 0), (start, -1, 1, 0)]
        if connected is None:
            changes.append((end, 0, -1, 0))
        else:
            connected_at = min(max(float(connected), start), end)
            changes += [(connected_at, 0, -1, 1), (end, 0, 0, -1)]
    changes.sort()
    steps = [PhaseStep(0.0, 0, 0, 0)]
    queued_n = connecting_n = reading_n = 0
    for when, dq, dc, dr in changes:
        queued_n, connecting_n, reading_n = queued_n + dq, connecting_n + dc, reading_n + dr
        step = PhaseStep(when, queued_n, connecting_n, reading_n)
        if steps[-1].time == when:
            steps[-1] = step
        else:
            steps.append(step)
    return steps


def counts_at(steps: Sequence[PhaseStep], when: float) -> PhaseStep:
    """Return the step in force at ``when``: the last one at or before it."""
    found = steps[0]
    for step in steps:
        if step.time > when:
            break
        found = step
    return found


def peak_queued(steps: Sequence[PhaseStep]) -> int:
    """Return the most URLs that were queued, found and not begun, at one moment."""
    return max(step.queued for step in steps)
