"""Two stages' crawlers side by side, function beside function: ``nox -s diff -- stage1 stage2``.

A plain diff of stage 1 against stage 2 is one hunk: the code moved as well as changed
(stage 1's ``Fetcher`` became ``Crawler.request``, elsewhere in the file).  So each file is
cut with :mod:`ast` into pieces (functions, methods, a class's own lines, the module's code
between them); the pieces are paired by qualified name, or where stage 1 has other names by
:data:`STAGE1_TO_LATER`, the chapter's correspondences; and each pair's lines are aligned
with :class:`difflib.SequenceMatcher`, so that ``yield from self.q.get()`` sits beside
``await self.q.get()``.  Out come two columns, one HTML page (``--html``) or difflib's
unified diff (``--unified``).  Blank lines are left out.  Standard library only: nox runs
this on its own Python.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import html
import io
import itertools
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"  # where --html writes by default: git ignores it
STAGES = {"stage1": "stage1_callbacks", "stage2": "stage2_generators", "stage3": "stage3_asyncio"}

#: The marks of the middle column, and what they say about the row.
SAME, CHANGED, LEFT_ONLY, RIGHT_ONLY = " ", "|", "<", ">"
MEANING = {SAME: "the same (indentation aside)", CHANGED: "changed"}
MEANING |= {LEFT_ONLY: "only on the left", RIGHT_ONLY: "only on the right"}

#: Two lines that differ are one line edited if this share of their characters match
#: (difflib's ratio); their changed words are then worth marking.
SIMILAR = 0.6
#: In a stretch with no such pair, lines this much alike still stand side by side: one
#: took the other's place.  Any lower, and chance (``self.``, brackets) would decide.
RESEMBLE = 0.4


@dataclass(frozen=True)
class Correspondence:
    """Pieces of stage 1, and those of stages 2 and 3 that took over their job, and why.

    ``Fetcher.*`` stands for the class's own lines and all its methods, in file order.
    """

    stage1: tuple[str, ...]
    later: tuple[str, ...]
    why: str


#: The chapter's correspondences between names that differ.  Each side is aligned in the
#: order given: one try's callbacks against request first, the retries against fetch's loop.
STAGE1_TO_LATER = (
    Correspondence(
        ("Fetcher.*",),
        ("Crawler.request", "Crawler.fetch"),
        "A try's chain of callbacks, its state kept in attributes, becomes one coroutine with "
        "local variables (request). The retries in start, _on_timeout and _fail become the loop "
        "in fetch.",
    ),
    Correspondence(
        ("Crawler.fetch",),
        (),
        "Stage 1's fetch only makes a Fetcher and has the loop start it. In stages 2 and 3, "
        "fetch is the retry loop, set beside stage 1's Fetcher.",
    ),
    Correspondence(
        ("Crawler.work", "Crawler.finished", "Crawler.callback_failed"),
        ("Crawler.work",),
        "Stage 1 calls work() again after every fetch (finished), and only the loop sees an "
        "exception in a callback (callback_failed). Stages 2 and 3 keep workers waiting at the "
        "queue, and catch it with try/except around the fetch.",
    ),
    Correspondence(
        ("Crawler.park",),
        ("Crawler.robots",),
        "Pages parked by hand until their robots.txt is in, against pages that wait on the Task "
        "fetching it.",
    ),
    Correspondence(
        ("Crawler.cancel",),
        (),
        "Ctrl-C: stage 1 closes every Fetcher by hand. Stages 2 and 3 cancel the main task "
        "(stage 2's module-level crawl arranges it, stage 3 leaves it to asyncio.Runner), and "
        "Crawler.crawl's finally cancels the workers.",
    ),
)


@dataclass(frozen=True)
class Line:
    """One line of a file: its number (from 1) and its text, without the newline."""

    number: int
    text: str


@dataclass(frozen=True)
class Piece:
    """A named part of a module: a function, a method, a class's own lines, module code."""

    name: str
    lines: tuple[Line, ...]  # in the order of the file, blank lines left out


@dataclass(frozen=True)
class Row:
    """One row of the side-by-side view: a line on either side, or on one only."""

    mark: str  # SAME, CHANGED, LEFT_ONLY or RIGHT_ONLY
    left: Line | None
    right: Line | None
    similar: bool = False  # CHANGED, and alike enough that the words that differ matter


@dataclass(frozen=True)
class Section:
    """A pair of groups of pieces doing the same job, and their aligned lines."""

    left: tuple[Piece, ...]  # either side may be empty: a piece with no counterpart
    right: tuple[Piece, ...]
    left_label: str  # the pieces' names: "Crawler.work + Crawler.finished"
    right_label: str
    why: str  # from the table; empty for a pair by name
    left_lines: str = ""  # the lines they span: "208-219, 239-245"
    right_lines: str = ""
    rows: tuple[Row, ...] = ()


@dataclass(frozen=True)
class SideBySide:
    """Two files, compared section by section."""

    left_name: str
    right_name: str
    sections: tuple[Section, ...]
    problems: tuple[str, ...]  # table entries that did not apply, and why


# --- step 1: pieces --------------------------------------------------------------------

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def pieces(source: str, filename: str = "<unknown>") -> list[Piece]:
    """Cut a module into its functions, methods, classes' own lines and module code.

    Every non-blank line belongs to exactly one piece.  Comments right above a
    definition, at its indentation, belong to it: they introduce it.
    """
    text = source.splitlines()
    owner: dict[int, str] = {}  # line number -> the name of the piece it belongs to

    def claim(body: Iterable[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, DEFINITIONS):
                continue
            name = prefix + node.name
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            while first > 1 and text[first - 2].startswith(" " * node.col_offset + "#"):
                first -= 1
            for number in range(first, (node.end_lineno or node.lineno) + 1):
                owner[number] = name
            if isinstance(node, ast.ClassDef):
                claim(node.body, name + ".")  # a method's lines leave its class's own

    claim(ast.parse(source, filename).body, "")
    found: dict[str, list[Line]] = {}
    previous = ""
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        name = owner.get(number, "")
        if not name:  # module code: each run between definitions is a piece of its own
            if previous.startswith("<module>"):
                name = previous
            else:
                name = f"<module> after {previous}" if "<module>" in found else "<module>"
        found.setdefault(name, []).append(Line(number, line.expandtabs()))
        previous = name
    return [Piece(name, tuple(lines)) for name, lines in found.items()]


# --- step 2: pairs ---------------------------------------------------------------------


def stage_of(path: Path) -> str | None:
    """The stage a crawler file belongs to ("stage1"), from its folder's name; else None."""
    return next((short for short, package in STAGES.items() if path.parent.name == package), None)


def pair(
    left: list[Piece], right: list[Piece], stages: list[str | None]
) -> tuple[list[Section], list[str]]:
    """Pair two files' pieces: by the table first, then by name; the rest stay alone.

    Returns the pairs (sections without rows yet) in reading order, and the table entries
    not used: an entry is skipped whole if one of its names is missing or already taken,
    for half of a correspondence would be a wrong one.
    """
    table = [(c.stage1, c.later, c.why) for c in STAGE1_TO_LATER]
    if stages[0] in ("stage2", "stage3") and stages[1] == "stage1":
        table = [(theirs, mine, why) for mine, theirs, why in table]
    elif stages[0] != "stage1" or stages[1] not in ("stage2", "stage3"):
        table = []
    sections: list[Section] = []
    problems: list[str] = []
    free = [{p.name: p for p in left}, {p.name: p for p in right}]  # not paired yet
    for names_left, names_right, why in table:
        mine, theirs = expand(names_left, left), expand(names_right, right)
        missing = [name for name, found in (*mine, *theirs) if not found]
        twice = [
            p.name
            for side, chosen in enumerate((mine, theirs))
            for _, found in chosen
            for p in found
            if p.name not in free[side]
        ]
        if missing or twice:
            problems.append(
                f"{' + '.join(names_left)} = {' + '.join(names_right)} not used: missing "
                f"{', '.join(missing) or 'nothing'}; already paired {', '.join(twice) or 'nothing'}"
            )
            continue
        chosen = [[p for _, found in group for p in found] for group in (mine, theirs)]
        for side, group in enumerate(chosen):
            for piece in group:
                del free[side][piece.name]
        sections.append(
            Section(
                tuple(chosen[0]),
                tuple(chosen[1]),
                " + ".join(names_left),
                " + ".join(names_right),
                why,
            )
        )
    for piece in left:
        if piece.name in free[0]:
            match = free[1].pop(piece.name, None)
            sections.append(
                Section(
                    (piece,), (match,) if match else (), piece.name, match.name if match else "", ""
                )
            )
    # The left file's order; what is only on the right goes where the right file has it:
    # before the first pair whose right side comes after it in the right file.
    sections += [Section((), (piece,), "", piece.name, "") for piece in free[1].values()]
    ordered = sorted((s for s in sections if s.left), key=lambda s: first_line(s.left))
    for alone in sorted((s for s in sections if not s.left), key=lambda s: first_line(s.right)):
        after = [
            i
            for i, s in enumerate(ordered)
            if first_line(s.right or alone.right) > first_line(alone.right)
        ]
        ordered.insert(after[0] if after else len(ordered), alone)
    return ordered, problems


def expand(names: Sequence[str], every: Sequence[Piece]) -> list[tuple[str, list[Piece]]]:
    """Each name of a table entry with its pieces: one, or for ``Class.*`` the class's
    own lines and its methods; none if there is no such piece (or class)."""
    found = []
    for name in names:
        cls = name.removesuffix(".*")
        pieces = [
            p for p in every if p.name == cls or (cls != name and p.name.startswith(cls + "."))
        ]
        found.append((name, pieces if pieces and pieces[0].name == cls else []))
    return found


def first_line(pieces: Sequence[Piece]) -> int:
    """The number of the first line of some pieces."""
    return min(piece.lines[0].number for piece in pieces)


# --- step 3: rows ----------------------------------------------------------------------


def align(left: Sequence[Line], right: Sequence[Line]) -> list[Row]:
    """Align two runs of lines: the same lines side by side, changed ones beside their kin.

    Lines are compared without their indentation, which a move into a ``with`` block
    changes without changing the code.  Short lines (``try:``, ``return``) are difflib's
    junk here: they occur everywhere, and an alignment hung on a ``return`` is an accident.
    """
    a, b = [x.text.strip() for x in left], [y.text.strip() for y in right]
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        lambda s: len(s) < 8, a, b, False
    ).get_opcodes():
        if tag == "equal":
            rows += [Row(SAME, x, y) for x, y in zip(left[i1:i2], right[j1:j2], strict=True)]
        else:
            rows += changed(left[i1:i2], right[j1:j2])
    return rows


def changed(left: Sequence[Line], right: Sequence[Line], cutoff: float = SIMILAR) -> list[Row]:
    """Rows for a stretch where the two sides differ: each changed line beside its kin.

    First the lines alike enough to be one line edited (``SIMILAR``); then, between two
    such pairs, the lines at least ``RESEMBLE`` alike, as ``sdiff`` puts a replaced block
    beside its replacement.  What is left is on one side only.
    """
    rows: list[Row] = []
    i = j = 0
    for pi, pj in [*likeliest(left, right, cutoff), (len(left), len(right))]:
        if cutoff == SIMILAR:  # the lines between two pairs, paired at the lower bar
            rows += changed(left[i:pi], right[j:pj], RESEMBLE)
        else:
            rows += [Row(LEFT_ONLY, x, None) for x in left[i:pi]]
            rows += [Row(RIGHT_ONLY, None, y) for y in right[j:pj]]
        if pi < len(left):
            same = left[pi].text.strip() == right[pj].text.strip()  # one too short to anchor
            rows.append(
                Row(SAME if same else CHANGED, left[pi], right[pj], cutoff == SIMILAR > same)
            )
        i, j = pi + 1, pj + 1
    return rows


def likeliest(left: Sequence[Line], right: Sequence[Line], cutoff: float) -> list[tuple[int, int]]:
    """The pairs of lines at least ``cutoff`` alike (difflib's ratio), in order on both sides,
    that together share the most characters: a longest common subsequence of lines, each
    pair counting for its shared characters, so that a long line that changed a little
    outweighs a short one that did not.  A comment is never paired with code.
    """
    # The comments of stages 2 and 3 say where a coroutine suspends, at the end of the very
    # lines that changed: left on, they would hide `chunk = self.sock.recv(CHUNK)` from
    # `chunk = yield from sock_recv(sock, 64 * 1024)  # suspends: ...`.  ("  #" is PEP 8's
    # inline comment; a string could imitate it: a worse pairing then, nothing more.)
    a, b = ([x.text.strip().split("  #")[0] for x in side] for side in (left, right))
    shared = {}
    for (i, x), (j, y) in itertools.product(enumerate(a), enumerate(b)):
        matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
        ok = x.startswith("#") == y.startswith("#") and matcher.real_quick_ratio() >= cutoff
        ok = ok and matcher.quick_ratio() >= cutoff and matcher.ratio() >= cutoff  # cheap first
        shared[i, j] = matcher.ratio() * (len(x) + len(y)) / 2 if ok else 0.0
    best = [[0.0] * (len(b) + 1) for _ in range(len(a) + 1)]  # the most a[i:], b[j:] can share
    for i, j in itertools.product(reversed(range(len(a))), reversed(range(len(b)))):
        paired = best[i + 1][j + 1] + shared[i, j] if shared[i, j] else 0.0
        best[i][j] = max(best[i + 1][j], best[i][j + 1], paired)
    chosen: list[tuple[int, int]] = []
    i = j = 0
    while i < len(a) and j < len(b):  # walk the table along the choices that made it
        if shared[i, j] and best[i][j] == best[i + 1][j + 1] + shared[i, j]:
            chosen.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return chosen


def compare(left_path: Path, right_path: Path) -> SideBySide:
    """Compare two crawler files: pieces, pairs, aligned rows."""
    left, right = (pieces(path.read_text("utf-8"), str(path)) for path in (left_path, right_path))
    pairs, problems = pair(left, right, [stage_of(left_path), stage_of(right_path)])
    sections = tuple(
        replace(
            p,
            left_lines=line_ranges(p.left, left),
            right_lines=line_ranges(p.right, right),
            rows=tuple(
                align([x for q in p.left for x in q.lines], [y for q in p.right for y in q.lines])
            ),
        )
        for p in pairs
    )
    return SideBySide(display_name(left_path), display_name(right_path), sections, tuple(problems))


def display_name(path: Path) -> str:
    """A file's name relative to the repository when it is in it, else as given."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def line_ranges(chosen: Sequence[Piece], every: Sequence[Piece]) -> str:
    """The lines some of a file's pieces span, as the file numbers them: "31-178, 230-237".

    Pieces next to each other in the file (none between them) make one range.
    """
    spans: list[list[int]] = []
    for piece in every:  # in the order of the file
        if piece not in chosen:
            spans.append([])  # a piece between: whatever comes next starts a new range
        elif spans and spans[-1]:
            spans[-1][1] = piece.lines[-1].number
        else:
            spans.append([piece.lines[0].number, piece.lines[-1].number])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in filter(None, spans))


def summary(view: SideBySide) -> str:
    """How many rows of each kind the whole comparison has."""
    found = collections.Counter(row.mark for section in view.sections for row in section.rows)
    return (
        f"{found[SAME]} lines the same, {found[CHANGED]} changed, "
        f"{found[LEFT_ONLY]} only on the left, {found[RIGHT_ONLY]} only on the right."
    )


# --- output: the terminal --------------------------------------------------------------

#: Narrower than this, not one line of code is legible: a narrower width is taken as this.
MIN_WIDTH = 40
Cell = tuple[str, str]  # one side of a terminal line: a line number (or "") and text


def render_text(view: SideBySide, width: int, wrap: bool = True) -> str:
    """Two columns and a mark between them, no line longer than ``width``.

    Each column loses its section's common indentation (a method's four spaces), which
    would only eat the width.  A line longer than its column wraps onto rows of its own,
    indented past its own indentation and unnumbered, so that it cannot be taken for the
    next line; or is cut short with "…" when ``wrap`` is false.
    """
    every = [line for s in view.sections for p in (*s.left, *s.right) for line in p.lines]
    digits = len(str(max((line.number for line in every), default=1)))
    width = max(width, MIN_WIDTH)
    column = (width - 2 * digits - 5) // 2  # 5: three spaces and the mark

    def fit(text: str, code: bool = True) -> list[str]:
        if len(text) <= column:
            return [text]
        if code and not wrap:
            return [text[: column - 1] + "…"]
        hang = " " * min(len(text) - len(text.lstrip()) + 4, column // 2) if code else ""
        return textwrap.wrap(text, column, subsequent_indent=hang, break_on_hyphens=False)

    def cells(line: Line | None, indent: int) -> list[Cell]:
        parts = fit(line.text[indent:]) if line else [""]
        return [(str(line.number) if line and not k else "", p) for k, p in enumerate(parts)]

    def put(left: list[Cell], mark: str, right: list[Cell]) -> None:
        for (ln, lt), (rn, rt) in itertools.zip_longest(left, right, fillvalue=("", "")):
            out.append(f"{ln:>{digits}} {lt:<{column}} {mark} {rn:>{digits}} {rt}".rstrip())

    def prose(left: str, right: str) -> None:  # names of files and pieces: always wrapped
        put([("", t) for t in fit(left, False)], " ", [("", t) for t in fit(right, False)])

    out: list[str] = []
    prose(view.left_name, view.right_name)
    out += textwrap.wrap("  ".join(f"'{m}' {words}" for m, words in MEANING.items()), width)
    for s in view.sections:
        out.append("=" * width)
        prose(*(f"{label} (lines {lines})" if label else "" for label, lines in heads(s)))
        out += textwrap.wrap(s.why, width, initial_indent="  ", subsequent_indent="  ")
        out.append("-" * width)
        indents = [
            min(len(x.text) - len(x.text.lstrip()) for p in side for x in p.lines) if side else 0
            for side in (s.left, s.right)
        ]
        for row in s.rows:
            put(cells(row.left, indents[0]), row.mark, cells(row.right, indents[1]))
    out.append("=" * width)
    out += textwrap.wrap(summary(view), width)
    for problem in view.problems:
        out += textwrap.wrap(f"table: {problem}", width)
    return "\n".join(out) + "\n"


def heads(section: Section) -> tuple[tuple[str, str], tuple[str, str]]:
    """What a section's heading says of each side: its pieces' names, and their lines."""
    return (section.left_label, section.left_lines), (section.right_label, section.right_lines)


# --- output: one HTML page -------------------------------------------------------------

# Inline and self-contained: no script, no font, no picture, nothing fetched from anywhere,
# so the page works from a USB stick and in a classroom without a network.  The type is
# large enough for the back of a room (code at 18 px), and long lines wrap rather than
# scroll sideways: two columns of code fit a 1280-pixel projector.
CSS = """
body { font: 18px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1f2328; }
nav ol { columns: 2 24rem; } a { color: #0550ae; } h1 { font-size: 1.5rem; }
section { margin: 2rem 0; } th small, td.n { color: #656d76; font-weight: normal; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
.legend span, td.c { font-family: ui-monospace, Menlo, Consolas, monospace; padding: 0 .4em; }
col.n { width: 2.6em; } col.m { width: 1.2em; } td.n { text-align: right; font-size: 14px; }
th { text-align: left; border-bottom: 2px solid #d0d7de; padding: .3em; overflow-wrap: anywhere; }
td { vertical-align: top; } td.m { text-align: center; } td.none { background: #f6f8fa; }
td.c { white-space: pre-wrap; overflow-wrap: anywhere; padding-left: 4ch; text-indent: -4ch; }
tr.changed td.c, .legend .changed { background: #fff8c5; }
tr.left td.c.l, .legend .left { background: #ffebe9; }
tr.right td.c.r, .legend .right { background: #dafbe1; }
del, ins { text-decoration: none; } del { background: #ffc1bd; } ins { background: #aceebb; }
"""
ROW_CLASS = {SAME: "same", CHANGED: "changed", LEFT_ONLY: "left", RIGHT_ONLY: "right"}


def render_html(view: SideBySide) -> str:
    """One page: a contents list of the pairs, then a table per pair, changes highlighted.

    Each pair's anchor is its names (``#crawler-work``), for a link to send a class to.
    In a pair of lines alike enough, the words that differ are marked too (``<del>`` on
    the left, ``<ins>`` on the right).
    """
    esc, title, ids = html.escape, f"{view.left_name} beside {view.right_name}", list[str]()
    for s in view.sections:
        name = re.sub(r"[^a-z0-9]+", "-", (s.left_label or s.right_label).split(" + ")[0].lower())
        name = name.strip("-")
        ids.append(name if name not in ids else f"{name}-{len(ids)}")
    out = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f'<h1 id="contents">{esc(title)}</h1><p class="legend">',
        *(f'<span class="{ROW_CLASS[m]}">{esc(m)}</span> {words}' for m, words in MEANING.items()),
        f'. {esc(summary(view))}</p><nav aria-label="the pairs"><ol>',
        *(
            f'<li><a href="#{id}">{esc(s.left_label or "(nothing)")}</a> beside '
            f"{esc(s.right_label or '(nothing)')}</li>"
            for id, s in zip(ids, view.sections, strict=True)
        ),
        "</ol></nav>",
    ]
    for id, s in zip(ids, view.sections, strict=True):
        th = [
            f"{esc(label)} <small>lines {lines}</small>" if label else ""
            for label, lines in heads(s)
        ]
        out.append(f'<section id="{id}"><table><colgroup><col class="n"><col><col class="m">')
        out.append(f'<col class="n"><col></colgroup><thead><tr><th colspan="2">{th[0]}</th>')
        out.append(
            f'<th><a href="#contents" title="contents">&uarr;</a></th><th colspan="2">{th[1]}</th>'
        )
        out.append(
            f'</tr></thead><tbody><tr><td colspan="5">{esc(s.why)}</td></tr>'
            if s.why
            else "</tr></thead><tbody>"
        )
        for row in s.rows:
            left, right = cell_html(row)
            out.append(
                f'<tr class="{ROW_CLASS[row.mark]}">{code_html(row.left, left, "l")}'
                f'<td class="m">{esc(row.mark)}</td>{code_html(row.right, right, "r")}</tr>'
            )
        out.append("</tbody></table></section>")
    out += [f"<p>table: {esc(problem)}</p>" for problem in view.problems]
    return "\n".join([*out, "</body></html>"]) + "\n"


WORDS = re.compile(r"\w+|\s+|[^\w\s]")


def cell_html(row: Row) -> tuple[str, str]:
    """The escaped code of a row's two sides, with the words that differ marked if alike.

    Words, not characters: compared character by character, ``stage1_callbacks`` and
    ``stage2_generators`` would come out as confetti of shared letters.  Indentation is
    left out of the comparison, as it is when the lines are paired.
    """
    texts = [line.text if line else "" for line in (row.left, row.right)]
    if not row.similar:
        return html.escape(texts[0]), html.escape(texts[1])
    a, b = (WORDS.findall(text.lstrip()) for text in texts)
    marked = [[text[: len(text) - len(text.lstrip())]] for text in texts]  # the indentation
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, False).get_opcodes():
        old, new = html.escape("".join(a[i1:i2])), html.escape("".join(b[j1:j2]))
        marked[0].append(old if tag == "equal" else f"<del>{old}</del>" if old else "")
        marked[1].append(new if tag == "equal" else f"<ins>{new}</ins>" if new else "")
    return "".join(marked[0]), "".join(marked[1])


def code_html(line: Line | None, content: str, side: str) -> str:
    """One side's two cells, its line number and its code; a side with no line is greyed."""
    if line is None:
        return f'<td class="n"></td><td class="c {side} none"></td>'
    return f'<td class="n">{line.number}</td><td class="c {side}">{content}</td>'


# --- the command line ------------------------------------------------------------------


def find(name: str) -> Path:
    """The crawler file a name stands for: a stage (stage1), its folder, or a path."""
    if name in STAGES:
        return ROOT / STAGES[name] / "crawler.py"
    path = Path(name) if Path(name).exists() else ROOT / name
    return path / "crawler.py" if path.is_dir() else path


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two stages' crawlers; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="nox -s diff --",
        description="Two stages' crawler.py side by side, aligned function by function.",
    )
    parser.add_argument(
        "stages", nargs="*", metavar="STAGE",
        help="two of stage1, stage2, stage3, or paths to crawler files (default: stage2 stage3)",
    )  # fmt: skip
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--html",
        action="store_true",
        help="write one HTML page instead, to out/diff-STAGE-STAGE.html (or --out PATH)",
    )
    kind.add_argument("--unified", action="store_true", help="print a unified diff instead")
    parser.add_argument("--out", type=Path, metavar="PATH", help="where --html writes its page")
    parser.add_argument(
        "--width",
        type=int,
        metavar="N",
        help=f"columns to fill, at least {MIN_WIDTH} (default: the terminal's width)",
    )
    parser.add_argument(
        "--truncate", action="store_true", help="cut long lines short instead of wrapping them"
    )
    args = parser.parse_args(argv)
    if len(args.stages) not in (0, 2):
        parser.error("give two stages, for example: stage1 stage2")
    if args.out and not args.html:
        parser.error("--out is where --html writes: give --html too")
    left, right = paths = [find(name) for name in args.stages or ["stage2", "stage3"]]
    for path in paths:
        if not path.is_file():
            parser.error(f"no {path}: name two of {', '.join(STAGES)}, or two crawler files")
    try:
        if args.unified:
            old, new = (path.read_text("utf-8").splitlines() for path in paths)
            diff = difflib.unified_diff(
                old, new, display_name(left), display_name(right), lineterm=""
            )
            sys.stdout.write("".join(line + "\n" for line in diff))
            return 0
        try:
            view = compare(left, right)
        except SyntaxError as exc:  # a file being edited: the unified diff still works
            print(f"{exc.filename}:{exc.lineno}: {exc.msg}; try --unified", file=sys.stderr)
            return 1
        if args.html:
            names = [stage_of(path) or path.parent.name or path.stem for path in paths]
            out = args.out or OUT / f"diff-{names[0]}-{names[1]}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(render_html(view), encoding="utf-8")
            print(f"wrote {display_name(out)}")
            return 0
        if isinstance(sys.stdout, io.TextIOWrapper):  # a console that cannot show "…" gets "?"
            sys.stdout.reconfigure(errors="replace")
        width = args.width or shutil.get_terminal_size().columns
        sys.stdout.write(render_text(view, width, wrap=not args.truncate))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`| head`, a pager quit early) having seen what it wanted: no
        # error.  stdout goes to /dev/null first, or Python's last flush would complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
