"""The comparison's picture: fetches in flight over time, one lane per crawler, as SVG.

Written by hand (SVG is text), so that the picture needs nothing but the standard
library.  Each lane is a step chart of the number of fetches in flight, drawn from the
crawl's timeline; all lanes share one time axis, so a glance shows which crawler kept
its --max-tasks busy and which finished first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# Colours that stay apart for colour-blind readers (Okabe and Ito), then grey for the baseline.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#666666", "#CC79A7", "#E69F00")

WIDTH = 880
LEFT = 190  # room for the lane labels
RIGHT = 24
TOP = 62  # room for the title
LANE = 74  # height of a lane's chart
GAP = 22  # between lanes
BOTTOM = 46  # room for the time axis
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"


@dataclass(frozen=True)
class Lane:
    """One crawler's row: its name, its in-flight steps, when it ended, lines of facts."""

    name: str
    steps: Sequence[tuple[float, int]]  # (time, fetches in flight from then on)
    end: float
    facts: str


def nice_step(span: float, ticks: int = 8) -> float:
    """Return a tick spacing of 1, 2 or 5 times a power of ten giving about ``ticks`` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def step_path(steps: Sequence[tuple[float, int]], end: float, x: Scale, y: Scale) -> str:
    """Return an SVG path drawing the step function from time 0 to ``end``, closed below.

    Moves that land in the same tenth of a pixel are merged into one vertical stroke
    from their lowest to their highest value, so a crawl of many thousand fetches
    still gives a path of a few thousand points.
    """
    base = y(0)
    out = [f"M{x(0):.1f},{base:.1f}"]
    column: float | None = None
    values: list[float] = []

    def flush() -> None:
        if column is None:
            return
        out.append(f"H{column:.1f}")
        if len(values) > 1:
            out.append(f"V{min(values):.1f}V{max(values):.1f}")
        out.append(f"V{values[-1]:.1f}")

    for when, count in steps:
        px = round(x(min(when, end)), 1)
        if px != column:
            flush()
            column, values = px, []
        values.append(y(count))
    flush()
    out.append(f"H{x(end):.1f}V{base:.1f}Z")
    return "".join(out)


class Scale:
    """A linear map from data values to pixels."""

    def __init__(self, lo: float, hi: float, px_lo: float, px_hi: float) -> None:
        """Map ``lo``..``hi`` onto ``px_lo``..``px_hi``."""
        self.lo, self.px_lo = lo, px_lo
        self.factor = (px_hi - px_lo) / (hi - lo) if hi != lo else 0.0

    def __call__(self, value: float) -> float:
        """The pixel for a value."""
        return self.px_lo + (value - self.lo) * self.factor


def render(lanes: Sequence[Lane], *, title: str, subtitle: str, limit: int | None = None) -> str:
    """Return the SVG document: a titled stack of lanes over one time axis.

    ``limit`` (--max-tasks) is drawn as a dashed line in every lane, and sets the
    vertical scale unless some lane went higher.
    """
    height = TOP + len(lanes) * (LANE + GAP) + BOTTOM
    right = WIDTH - RIGHT
    span = max([lane.end for lane in lanes] + [1e-3])
    tick = nice_step(span)
    span = math.ceil(span / tick - 1e-9) * tick
    x = Scale(0.0, span, LEFT, right)
    peak = max([limit or 1] + [count for lane in lanes for _, count in lane.steps])
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        f"viewBox='0 0 {WIDTH} {height}' {FONT} font-size='13'>",
        f"<rect width='{WIDTH}' height='{height}' fill='white'/>",
        f"<text x='{LEFT}' y='24' font-size='17' font-weight='bold'>{escape(title)}</text>",
        f"<text x='{LEFT}' y='44' fill='#444'>{escape(subtitle)}</text>",
    ]
    bottom = TOP + len(lanes) * (LANE + GAP) - GAP
    # The time grid first, so the charts are drawn over it.
    for i in range(round(span / tick) + 1):
        px = x(i * tick)
        out.append(f"<line x1='{px:.1f}' y1='{TOP}' x2='{px:.1f}' y2='{bottom}' stroke='#e4e4e4'/>")
        out.append(
            f"<text x='{px:.1f}' y='{bottom + 18}' text-anchor='middle' fill='#444'>"
            f"{format_seconds(i * tick, tick)}</text>"
        )
    out.append(
        f"<text x='{(LEFT + right) / 2:.1f}' y='{bottom + 38}' text-anchor='middle' "
        "fill='#444'>seconds since the crawl began</text>"
    )
    for i, lane in enumerate(lanes):
        top = TOP + i * (LANE + GAP)
        y = Scale(0.0, peak, top + LANE, top)
        colour = COLOURS[i % len(COLOURS)]
        out += [
            f"<text x='{LEFT - 12}' y='{top + 22}' text-anchor='end' font-weight='bold' "
            f"fill='{colour}'>{escape(lane.name)}</text>",
            *(
                f"<text x='{LEFT - 12}' y='{top + 39 + 15 * n}' text-anchor='end' "
                f"font-size='11.5' fill='#444'>{escape(line)}</text>"
                for n, line in enumerate(lane.facts.splitlines())
            ),
            f"<line x1='{LEFT}' y1='{top + LANE}' x2='{right}' y2='{top + LANE}' stroke='#999'/>",
            f"<text x='{LEFT - 4}' y='{top + LANE}' text-anchor='end' font-size='10' "
            "fill='#777'>0</text>",
            f"<text x='{LEFT - 4}' y='{top + 9}' text-anchor='end' font-size='10' "
            f"fill='#777'>{peak}</text>",
            f"<path d='{step_path(lane.steps, lane.end, x, y)}' fill='{colour}' "
            f"fill-opacity='0.22' stroke='{colour}' stroke-width='1.2' "
            "stroke-linejoin='round'/>",
        ]
        if limit:
            ly = y(limit)
            out.append(
                f"<line x1='{LEFT}' y1='{ly:.1f}' x2='{right}' y2='{ly:.1f}' stroke='#333' "
                "stroke-dasharray='4 4' stroke-width='0.8'/>"
            )
    if limit:  # the legend for the dashed line, above the lanes on the right
        lx = right - 150
        out += [
            f"<line x1='{lx}' y1='{TOP - 10}' x2='{lx + 26}' y2='{TOP - 10}' stroke='#333' "
            "stroke-dasharray='4 4' stroke-width='0.8'/>",
            f"<text x='{lx + 32}' y='{TOP - 6}' font-size='11' fill='#333'>"
            f"--max-tasks {limit}</text>",
        ]
    out.append("</svg>")
    return "\n".join(out) + "\n"


def format_seconds(value: float, tick: float) -> str:
    """Format a tick label with as many decimals as the tick spacing needs."""
    decimals = max(0, -math.floor(math.log10(tick) + 1e-9)) if tick < 1 else 0
    return f"{value:.{decimals}f}"
