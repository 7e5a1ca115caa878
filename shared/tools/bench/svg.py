"""The comparison's pictures, as SVG written by hand: the phases of a crawl, and bar charts.

SVG is text, so the pictures need nothing but the standard library.  Two kinds:

* :func:`render`, one lane per crawler over one time axis.  Above each lane's line,
  its fetches in flight, reading and connecting stacked; below it, the URLs queued,
  found but not begun.  The in-flight scale is --max-tasks, the queued one the
  busiest queue of all the lanes, so that lanes compare at a glance.
* :func:`render_bars`, one horizontal bar per crawler with its figure printed on it:
  the benchmark's memory per fetch in flight, and its race of slow fetches.

Every picture has a title, a subtitle saying what was measured, labelled axes with
units, and a caption saying what to read from it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from shared.tools.bench.phases import PhaseStep

# Colours that stay apart for colour-blind readers (Okabe and Ito), then grey for the baseline.
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#666666", "#CC79A7", "#E69F00")
#: The phases, the same in every lane.
READING = "#0072B2"
CONNECTING = "#E69F00"
QUEUED = "#B9B9B9"
UNDIVIDED = "#009E73"  # a crawl whose JSON has no connect times: in flight, undivided

WIDTH = 880
LEFT = 190  # room for the lane labels
RIGHT = 84  # room for the lanes' scales, on their right
TOP = 84  # room for the title, the subtitle and the legend
UP = 58  # height of a lane's in-flight chart, above its line
DOWN = 34  # height of its queued chart, below the line
GAP = 20  # between lanes
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
CAPTION_CHARS = 128  # a caption line's length, in characters of 12 px text


@dataclass(frozen=True)
class Lane:
    """One crawler's row: its name, its phase steps, when it ended, lines of facts.

    ``divided`` is False for a crawl that recorded no connect times: its fetches in
    flight are drawn as one band, not split into connecting and reading.
    """

    name: str
    steps: Sequence[PhaseStep]
    end: float
    facts: str
    divided: bool = True


@dataclass(frozen=True)
class Bar:
    """One bar: who, what it measured, and the words printed on it and after it."""

    key: str  # the crawler's name in the results file, kept on the bar for readers and tests
    label: str
    sublabel: str
    value: float
    text: str  # printed at the bar's end: the figure itself
    note: str = ""  # printed under the figure, in grey
    colour: str = COLOURS[0]
    low: float | None = None  # a range drawn as a whisker, when the figure is a median
    high: float | None = None


def nice_step(span: float, ticks: int = 8) -> float:
    """Return a tick spacing of 1, 2 or 5 times a power of ten giving about ``ticks`` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


class Scale:
    """A linear map from data values to pixels."""

    def __init__(self, lo: float, hi: float, px_lo: float, px_hi: float) -> None:
        """Map ``lo``..``hi`` onto ``px_lo``..``px_hi``."""
        self.lo, self.px_lo = lo, px_lo
        self.factor = (px_hi - px_lo) / (hi - lo) if hi != lo else 0.0

    def __call__(self, value: float) -> float:
        """The pixel for a value."""
        return self.px_lo + (value - self.lo) * self.factor


def column_means(steps: Sequence[tuple[float, int]], end: float, width: float) -> list[float]:
    """Average a step function over columns of ``width`` seconds, from 0 to ``end``.

    ``steps`` are (time, value from then on), in time order; the value is 0 before the
    first.  Each column's figure is the mean over its time, weighted by how long each
    value lasted: a dip of a few microseconds in a column of milliseconds barely moves
    it, where drawing every step would draw a line for it.  The last column may be
    cut short by ``end``; its mean is over what it has.
    """
    columns = max(1, math.ceil(end / width - 1e-9)) if end > 0 else 0
    sums = [0.0] * columns
    value, since, column = 0, 0.0, 0  # the value in force, since when, in which column
    for when, count in [*steps, (end, 0)]:
        when = min(max(when, 0.0), end)
        while since < when:  # spread value over the columns from since to when
            boundary = (column + 1) * width
            if column < columns - 1 and boundary <= since:
                column += 1
                continue
            stop = when if column == columns - 1 else min(when, boundary)
            sums[column] += value * (stop - since)
            since = stop
        value = count
    return [
        total / (min(end, (i + 1) * width) - i * width) if end > i * width else 0.0
        for i, total in enumerate(sums)
    ]


def band_path(means: Sequence[float], width: float, x: Scale, y: Scale) -> str:
    """Return an SVG path of column means: a flat top over each column, closed on y(0)."""
    base = y(0)
    out = [f"M{x(0):.1f},{base:.1f}"]
    level = None
    for i, mean in enumerate(means):
        top = round(y(mean), 1)
        if top != level:
            out.append(f"H{x(i * width):.1f}V{top:.1f}")
            level = top
    out.append(f"H{x(len(means) * width):.1f}V{base:.1f}Z")
    return "".join(out)


def format_seconds(value: float, tick: float) -> str:
    """Format a tick label with as many decimals as the tick spacing needs."""
    decimals = max(0, -math.floor(math.log10(tick) + 1e-9)) if tick < 1 else 0
    return f"{value:.{decimals}f}"


def head(width: int, height: int, title: str, subtitle: str, left: float) -> list[str]:
    """The opening of a picture: the svg element, a white ground, the title and subtitle.

    The picture scales to the window or column it is in (its proportions kept by the
    viewBox): opened on a 1280-pixel projector, each unit of the drawing is 1.45 pixels,
    so that its smallest type (10 units) is 14.5 pixels, legible from the back of a room.
    """
    return [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' "
        f"style='width: 100%; height: auto' {FONT} font-size='13'>",
        f"<title>{escape(title)}</title>",
        f"<rect width='{width}' height='{height}' fill='white'/>",
        f"<text x='{left}' y='24' font-size='17' font-weight='bold'>{escape(title)}</text>",
        f"<text x='{left}' y='44' fill='#444'>{escape(subtitle)}</text>",
    ]


def caption_lines(caption: str) -> list[str]:
    """The caption, wrapped to the picture's width; paragraphs are kept apart by blank lines."""
    lines: list[str] = []
    for paragraph in caption.split("\n"):
        lines += textwrap.wrap(paragraph, CAPTION_CHARS) or [""]
    return lines


def caption_text(lines: Sequence[str], x: float, top: float, fill: str = "#222") -> list[str]:
    """The caption's lines as text elements, from ``top`` down, 16 px apart."""
    return [
        f"<text x='{x}' y='{top + 16 * n:.0f}' font-size='12' fill='{fill}'>{escape(line)}</text>"
        for n, line in enumerate(lines)
    ]


def time_axis(span: float, x: Scale, top: float, bottom: float, label: str) -> list[str]:
    """Vertical grid lines from ``top`` to ``bottom`` with their labels, and the axis title."""
    tick = nice_step(span)
    out = []
    for i in range(round(span / tick) + 1):
        px = x(i * tick)
        out.append(f"<line x1='{px:.1f}' y1='{top}' x2='{px:.1f}' y2='{bottom}' stroke='#e4e4e4'/>")
        out.append(
            f"<text x='{px:.1f}' y='{bottom + 18}' text-anchor='middle' fill='#444'>"
            f"{format_seconds(i * tick, tick)}</text>"
        )
    middle = (x(0) + x(span)) / 2
    out.append(
        f"<text x='{middle:.1f}' y='{bottom + 38}' text-anchor='middle' fill='#444'>"
        f"{escape(label)}</text>"
    )
    return out


def swatch(x: float, y: float, colour: str, label: str) -> list[str]:
    """A legend entry: a small square of colour and its label; returns its elements."""
    return [
        f"<rect x='{x:.0f}' y='{y - 10:.0f}' width='12' height='12' fill='{colour}'/>",
        f"<text x='{x + 17:.0f}' y='{y:.0f}' font-size='12' fill='#333'>{escape(label)}</text>",
    ]


def rounded_span(span: float) -> float:
    """The axis length: ``span`` rounded up to a whole number of ticks."""
    span = max(span, 1e-3)
    tick = nice_step(span)
    return math.ceil(span / tick - 1e-9) * tick


def render(
    lanes: Sequence[Lane],
    *,
    title: str,
    subtitle: str,
    caption: str = "",
    limit: int | None = None,
) -> str:
    """Return the SVG document: a titled stack of lanes over one time axis, and a caption.

    ``limit`` (--max-tasks) is drawn as a dashed line in every lane, and sets the
    in-flight scale unless some lane went higher.  The caption gets a last sentence
    saying over how long a time each column of pixels is averaged.
    """
    lane_height = UP + DOWN
    bottom = TOP + len(lanes) * (lane_height + GAP) - GAP
    right = WIDTH - RIGHT
    span = rounded_span(max([lane.end for lane in lanes] + [1e-3]))
    x = Scale(0.0, span, LEFT, right)
    caption += (
        f" Each column of pixels is the average over its {span / (right - LEFT) * 1000:.2g} ms:"
        " the microseconds between one fetch's end and the next one's start blur away."
    )
    lines = caption_lines(caption.strip())
    peak = max([limit or 1] + [step.in_flight for lane in lanes for step in lane.steps])
    most_queued = max([1] + [step.queued for lane in lanes for step in lane.steps])
    height = bottom + 58 + 16 * len(lines)
    out = head(WIDTH, height, title, subtitle, LEFT)
    out += legend(LEFT, TOP - 16, limit, all(lane.divided for lane in lanes))
    out += time_axis(span, x, TOP, bottom, "seconds since the crawl began")
    for i, lane in enumerate(lanes):
        top = TOP + i * (lane_height + GAP)
        out += draw_lane(lane, top, x, peak, most_queued, limit)
    out += caption_text(lines, 24, bottom + 62)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def legend(x: float, y: float, limit: int | None, divided: bool) -> list[str]:
    """The phase picture's legend, one row above the lanes."""
    out: list[str] = []
    entries = [(READING, "reading"), (CONNECTING, "connecting")]
    entries += [] if divided else [(UNDIVIDED, "in flight, undivided")]
    entries += [(QUEUED, "queued, below the line")]
    for colour, words in entries:
        out += swatch(x, y, colour, words)
        x += 40 + 7 * len(words)
    if limit:
        out += [
            f"<line x1='{x}' y1='{y - 4}' x2='{x + 24}' y2='{y - 4}' stroke='#333' "
            "stroke-dasharray='4 4' stroke-width='0.8'/>",
            f"<text x='{x + 30}' y='{y}' font-size='12' fill='#333'>--max-tasks {limit}</text>",
        ]
    return out


def draw_lane(
    lane: Lane, top: float, x: Scale, peak: int, most_queued: int, limit: int | None
) -> list[str]:
    """One lane: its labels, its scales, in flight above its line and queued below."""
    line = top + UP  # where the counts are 0
    up = Scale(0.0, peak, line, top)
    down = Scale(0.0, most_queued, line, line + DOWN)
    right = WIDTH - RIGHT
    out = [
        f"<text x='{LEFT - 12}' y='{top + 16}' text-anchor='end' font-weight='bold'>"
        f"{escape(lane.name)}</text>",
        *(
            f"<text x='{LEFT - 12}' y='{top + 33 + 15 * n}' text-anchor='end' "
            f"font-size='11.5' fill='#444'>{escape(text)}</text>"
            for n, text in enumerate(lane.facts.splitlines())
        ),
    ]
    width = 1 / x.factor  # one pixel's worth of seconds: the bands are averaged over it

    def band(counts: Sequence[tuple[float, int]], y: Scale, colour: str) -> str:
        means = column_means(counts, lane.end, width)
        return f"<path d='{band_path(means, width, x, y)}' fill='{colour}'/>"

    # Stacked by painting: everything in flight first, then the reading part over it,
    # from the line up, so that what stays visible above it is the connecting part.
    in_flight = [(step.time, step.in_flight) for step in lane.steps]
    out.append(band(in_flight, up, CONNECTING if lane.divided else UNDIVIDED))
    if lane.divided:
        out.append(band([(step.time, step.reading) for step in lane.steps], up, READING))
    out.append(band([(step.time, step.queued) for step in lane.steps], down, QUEUED))
    out += [
        f"<line x1='{LEFT}' y1='{line}' x2='{right}' y2='{line}' stroke='#555'/>",
        scale_label(right, top + 8, f"{peak} in flight"),
        scale_label(right, line + 4, "0"),
        scale_label(right, line + DOWN, f"{most_queued} queued"),
    ]
    if limit:
        ly = up(limit)
        out.append(
            f"<line x1='{LEFT}' y1='{ly:.1f}' x2='{right}' y2='{ly:.1f}' stroke='#333' "
            "stroke-dasharray='4 4' stroke-width='0.8'/>"
        )
    return out


def scale_label(right: float, y: float, text: str) -> str:
    """A small grey label just right of the charts: the value of a lane's scale at ``y``."""
    return f"<text x='{right + 4}' y='{y:.1f}' font-size='10' fill='#666'>{escape(text)}</text>"


BAR_LEFT = 250  # room for the bars' labels
BAR_RIGHT = 190  # room for the figures and notes after the longest bar
BAR = 30  # a bar's thickness
BAR_GAP = 18


def render_bars(
    bars: Sequence[Bar],
    *,
    title: str,
    subtitle: str,
    axis: str,
    caption: str = "",
    source: str = "",
    reference: tuple[float, str] | None = None,
) -> str:
    """Return the SVG document: one horizontal bar per crawler, its figure printed at its end.

    ``axis`` names the quantity and its unit.  ``source`` says where the figures come
    from, in grey under the caption.  A ``reference`` (value, words) is drawn as a
    dashed vertical line across the bars, labelled above them.
    """
    lines = caption_lines(caption) if caption else []
    sources = caption_lines(source) if source else []
    top = 84
    bottom = top + len(bars) * (BAR + BAR_GAP) - BAR_GAP + 10
    height = bottom + 50 + 16 * (len(lines) + len(sources)) + (8 if lines or sources else 0)
    right = WIDTH - BAR_RIGHT
    values = [bar.high if bar.high is not None else bar.value for bar in bars]
    span = rounded_span(max([*values, reference[0] if reference else 0.0]))
    x = Scale(0.0, span, BAR_LEFT, right)
    out = head(WIDTH, height, title, subtitle, 24)
    out += time_axis(span, x, top - 10, bottom, axis)
    for i, bar in enumerate(bars):
        y = top + i * (BAR + BAR_GAP)
        end = x(bar.value)
        out += [
            f"<text x='{BAR_LEFT - 12}' y='{y + 13}' text-anchor='end' font-weight='bold'>"
            f"{escape(bar.label)}</text>",
            f"<text x='{BAR_LEFT - 12}' y='{y + 28}' text-anchor='end' font-size='11' "
            f"fill='#555'>{escape(bar.sublabel)}</text>",
            f"<rect x='{BAR_LEFT}' y='{y}' width='{end - BAR_LEFT:.1f}' height='{BAR}' "
            f"fill='{bar.colour}' data-crawler='{escape(bar.key)}' data-value='{bar.value:g}'>"
            f"<title>{escape(bar.label)}: {escape(bar.text)}</title></rect>",
        ]
        after = end
        if bar.low is not None and bar.high is not None and bar.high > bar.low:
            lo, hi, mid = x(bar.low), x(bar.high), y + BAR / 2
            out.append(
                f"<path d='M{lo:.1f},{mid - 6}V{mid + 6}M{lo:.1f},{mid}H{hi:.1f}"
                f"M{hi:.1f},{mid - 6}V{mid + 6}' stroke='#222' stroke-width='1.2' fill='none'/>"
            )
            after = max(after, hi)
        text_y = y + 20 if not bar.note else y + 13
        out.append(
            f"<text x='{after + 8:.1f}' y='{text_y}' font-weight='bold'>{escape(bar.text)}</text>"
        )
        if bar.note:
            out.append(
                f"<text x='{after + 8:.1f}' y='{y + 28}' font-size='11' fill='#555'>"
                f"{escape(bar.note)}</text>"
            )
    if reference:
        rx = x(reference[0])
        out += [
            f"<line x1='{rx:.1f}' y1='{top - 10}' x2='{rx:.1f}' y2='{bottom}' stroke='#222' "
            "stroke-dasharray='5 4'/>",
            f"<text x='{rx + 5:.1f}' y='{top - 14}' font-size='12' fill='#222'>"
            f"{escape(reference[1])}</text>",
        ]
    out += caption_text(lines, 24, bottom + 62)
    out += caption_text(sources, 24, bottom + 62 + 16 * len(lines), "#666")
    out.append("</svg>")
    return "\n".join(out) + "\n"
