"""Two stages' crawlers side by side, aligned function by function: ``nox -s diff``.

``python -m shared.tools.sidebyside stage1 stage2`` (``nox -s diff -- stage1 stage2``) prints the
two ``crawler.py`` files in two columns; ``--html`` writes the same as one page.

A plain diff of stage 1 against stage 2 is one hunk, because the code moved as well as
changed: the work of stage 1's ``Fetcher`` class went into ``Crawler.request``, which
sits elsewhere in the file and has another name.  So the files are compared in three steps:

1. cut each file into pieces with :mod:`ast`: a function or method each (``Crawler.work``),
   a class's own lines (``Fetcher``: its header, docstring and attributes), and the
   module's code outside them (``<module>``: docstring, imports, constants);
2. pair the pieces: by qualified name, and for the names stage 1 does not share with
   stages 2 and 3, by :data:`STAGE1_TO_LATER`, the chapter's own correspondences;
3. align the lines of each pair: :class:`difflib.SequenceMatcher` finds the lines that
   are the same; between them, lines that resemble each other are paired, so that
   ``yield from self.q.get()`` sits beside ``await self.q.get()``.

Blank lines are left out: they carry no code, and would only pair with each other.
Only the standard library is used, so nox runs this on its own Python.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import html
import io
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from shared import STAGES

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"  # where --html writes by default: git ignores it

#: The marks of the middle column, and what they say about the row.
SAME, CHANGED, LEFT_ONLY, RIGHT_ONLY = " ", "|", "<", ">"

#: Two lines that differ are paired only if at least this share of their characters match
#: (difflib's ratio).  Below it, pairing them would claim a kinship they do not have.
SIMILAR = 0.6
#: Between two such pairs, the lines left over stand side by side if this much alike:
#: one took the other's place.  Any lower, and chance (``self.``, brackets) decides.
RESEMBLE = 0.4


@dataclass(frozen=True)
class Correspondence:
    """Pieces of stage 1, and the pieces of stages 2 and 3 that took over their job.

    A name ending in ``.*`` stands for a class's own lines and all its methods, in the
    order of the file.  Stages 2 and 3 share their names, so they need no table.
    """

    stage1: tuple[str, ...]
    later: tuple[str, ...]
    why: str


#: The chapter's correspondences between names that differ.  The order within each side
#: is the reading order of the pair: lines are aligned in that order, so the callbacks
#: of one try come first, against request, and the retries after, against fetch's loop.
STAGE1_TO_LATER = (
    Correspondence(
        ("Fetcher.*",),
        ("Crawler.request", "Crawler.fetch"),
        "A try's chain of callbacks, its state kept in attributes, becomes one coroutine "
        "with local variables (request). The retries, spread over start, _on_timeout and "
        "_fail, become the loop in fetch.",
    ),
    Correspondence(
        ("Crawler.fetch",),
        (),
        "Stage 1's fetch only makes a Fetcher and has the loop start it. In stages 2 and "
        "3, fetch is the retry loop, set beside stage 1's Fetcher.",
    ),
    Correspondence(
        ("Crawler.work", "Crawler.finished", "Crawler.callback_failed"),
        ("Crawler.work",),
        "Stage 1 calls work() again after every fetch (finished), and only the loop sees "
        "an exception in a callback (callback_failed). Stages 2 and 3 keep workers "
        "waiting at the queue, and catch it with try/except around the fetch.",
    ),
    Correspondence(
        ("Crawler.park",),
        ("Crawler.robots",),
        "Pages parked by hand until their robots.txt is in, against pages that wait on "
        "the Task fetching it.",
    ),
    Correspondence(
        ("Crawler.cancel",),
        (),
        "Ctrl-C: stage 1 closes every Fetcher by hand. Stages 2 and 3 cancel the main "
        "task (stage 2's module-level crawl arranges it, stage 3 leaves it to "
        "asyncio.Runner), and Crawler.crawl's finally cancels the workers.",
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
    left_lines: str  # the lines they span: "208-219, 239-245"
    right_lines: str
    why: str  # from the table; empty for a pair by name
    rows: tuple[Row, ...]


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
            indent = " " * node.col_offset
            while first > 1 and text[first - 2].startswith(indent + "#"):
                first -= 1
            end = node.end_lineno or node.lineno
            for number in range(first, end + 1):
                owner[number] = name
            if isinstance(node, ast.ClassDef):
                claim(node.body, name + ".")  # a method's lines leave its class's own

    claim(ast.parse(source, filename).body, "")
    found: dict[str, list[Line]] = {}
    module_runs = 0
    previous = ""
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        name = owner.get(number, "")
        if not name:  # module code: each run between definitions is a piece of its own
            if not previous.startswith("<module>"):
                module_runs += 1
                name = "<module>" if module_runs == 1 else f"<module> after {previous}"
            else:
                name = previous
        found.setdefault(name, []).append(Line(number, line.expandtabs()))
        previous = name
    return [Piece(name, tuple(lines)) for name, lines in found.items()]


# --- step 2: pairs ---------------------------------------------------------------------


def stage_of(path: Path) -> str | None:
    """The stage a crawler file belongs to ("stage1"), from its folder's name; else None."""
    for short, package in STAGES.items():
        if path.parent.name == package:
            return short
    return None


#: A correspondence turned to face two files: (left names, right names, why).
Entry = tuple[tuple[str, ...], tuple[str, ...], str]


def table_for(left: str | None, right: str | None) -> list[Entry]:
    """The correspondences between two stages, whichever of them is on the left."""
    later = ("stage2", "stage3")
    if left == "stage1" and right in later:
        return [(c.stage1, c.later, c.why) for c in STAGE1_TO_LATER]
    if right == "stage1" and left in later:
        return [(c.later, c.stage1, c.why) for c in STAGE1_TO_LATER]
    return []


def expand(names: Sequence[str], found: Sequence[Piece]) -> tuple[list[Piece], list[str]]:
    """The pieces a table entry names, in the entry's order; and the names not found."""
    by_name = {piece.name: piece for piece in found}
    chosen: list[Piece] = []
    missing: list[str] = []
    for name in names:
        if name.endswith(".*"):
            cls = name[:-2]
            members = [p for p in found if p.name == cls or p.name.startswith(cls + ".")]
            chosen += members
            if cls not in by_name:
                missing.append(name)
        elif name in by_name:
            chosen.append(by_name[name])
        else:
            missing.append(name)
    return chosen, missing


def label(names: Sequence[str]) -> str:
    """How a section's heading names one side's pieces: "Crawler.work + Crawler.finished"."""
    return " + ".join(names)


@dataclass(frozen=True)
class Pair:
    """Pieces on the left and on the right that do the same job (one side may be empty)."""

    left: tuple[Piece, ...]
    right: tuple[Piece, ...]
    left_label: str
    right_label: str
    why: str


def pair(
    left: Sequence[Piece], right: Sequence[Piece], table: Sequence[Entry]
) -> tuple[list[Pair], list[str]]:
    """Pair two files' pieces: by the table first, then by name; the rest stay alone.

    Returns the pairs in reading order (the left file's, with pieces only on the right
    put where the right file has them) and the table entries that could not be used.
    An entry is skipped whole if one of its names is missing or already taken: half
    of a correspondence would be a wrong one.
    """
    pairs: list[Pair] = []
    taken_left: set[str] = set()
    taken_right: set[str] = set()
    problems: list[str] = []
    for left_names, right_names, why in table:
        mine, missing_left = expand(left_names, left)
        theirs, missing_right = expand(right_names, right)
        twice = [p.name for p in mine if p.name in taken_left]
        twice += [p.name for p in theirs if p.name in taken_right]
        if missing_left or missing_right or twice:
            missing = ", ".join(missing_left + missing_right) or "nothing"
            problems.append(
                f"{' + '.join(left_names)} = {' + '.join(right_names)} not used: missing "
                f"{missing}; already paired {', '.join(twice) or 'nothing'}"
            )
            continue
        taken_left.update(p.name for p in mine)
        taken_right.update(p.name for p in theirs)
        pairs.append(Pair(tuple(mine), tuple(theirs), label(left_names), label(right_names), why))
    theirs_by_name = {p.name: p for p in right if p.name not in taken_right}
    for piece in left:
        if piece.name in taken_left:
            continue
        match = theirs_by_name.pop(piece.name, None)
        if match is not None:
            pairs.append(Pair((piece,), (match,), piece.name, piece.name, ""))
        else:
            pairs.append(Pair((piece,), (), piece.name, "", ""))

    for piece in right:
        if piece.name in theirs_by_name:
            pairs.append(Pair((), (piece,), "", piece.name, ""))
    return in_reading_order(pairs), problems


def in_reading_order(pairs: Sequence[Pair]) -> list[Pair]:
    """The left file's order; what is only on the right goes where the right file has it.

    That is, before the first pair whose right side comes after it in the right file.
    """

    def first_line(pieces: Sequence[Piece]) -> int:
        return min(piece.lines[0].number for piece in pieces)

    ordered = sorted((p for p in pairs if p.left), key=lambda p: first_line(p.left))
    for alone in sorted((p for p in pairs if not p.left), key=lambda p: first_line(p.right)):
        where = next(
            (
                i
                for i, p in enumerate(ordered)
                if p.right and first_line(p.right) > first_line(alone.right)
            ),
            len(ordered),
        )
        ordered.insert(where, alone)
    return ordered


# --- step 3: rows ----------------------------------------------------------------------


def align(left: Sequence[Line], right: Sequence[Line]) -> list[Row]:
    """Align two runs of lines: the same lines side by side, changed ones beside their kin.

    Lines are compared without their indentation, which a move into a ``with`` block
    changes without changing the code.  Short lines (``try:``, ``return``) are not
    allowed to anchor the alignment on their own: they occur everywhere, and an
    alignment hung on a ``return`` is an accident.
    """
    a = [line.text.strip() for line in left]
    b = [line.text.strip() for line in right]
    matcher = difflib.SequenceMatcher(lambda s: len(s) < 8, a, b, autojunk=False)
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                Row(SAME, left[i], right[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
        else:
            rows += changed(left[i1:i2], right[j1:j2])
    return rows


def changed(left: Sequence[Line], right: Sequence[Line]) -> list[Row]:
    """Rows for a stretch where the two sides differ: each changed line beside its kin.

    Two passes.  First the lines alike enough to be one line edited (``SIMILAR``): these
    are marked ``similar``.  Then, between two such pairs, the lines left over are paired
    as well as they will go, as ``sdiff`` puts a replaced block beside its replacement;
    what is left after that is on one side only.
    """
    a = [code_of(line.text) for line in left]
    b = [code_of(line.text) for line in right]
    rows: list[Row] = []
    i = j = 0
    for ki, kj in [*likeliest(a, b, kinship), (len(a), len(b))]:
        gap_left, gap_right = a[i:ki], b[j:kj]
        gi = gj = 0
        for wi, wj in [
            *likeliest(gap_left, gap_right, resemblance),
            (len(gap_left), len(gap_right)),
        ]:
            rows += [Row(LEFT_ONLY, x, None) for x in left[i + gi : i + wi]]
            rows += [Row(RIGHT_ONLY, None, y) for y in right[j + gj : j + wj]]
            if (wi, wj) != (len(gap_left), len(gap_right)):
                rows.append(Row(CHANGED, left[i + wi], right[j + wj]))
            gi, gj = wi + 1, wj + 1
        if (ki, kj) != (len(a), len(b)):
            same = left[ki].text.strip() == right[kj].text.strip()
            rows.append(Row(SAME if same else CHANGED, left[ki], right[kj], similar=not same))
        i, j = ki + 1, kj + 1
    return rows


def code_of(line: str) -> str:
    """A line as compared for likeness: no indentation, no comment after the code.

    The comments of stages 2 and 3 say where a coroutine suspends, at the end of the very
    lines that changed; left on, they would hide ``chunk = self.sock.recv(CHUNK)`` and
    ``chunk = yield from sock_recv(sock, 64 * 1024)  # suspends: ...`` from each other.
    A line that is all comment is compared as it is.  (The split at "  #" is PEP 8's
    inline comment, which a string could imitate: a worse pairing then, nothing more.)
    """
    return line.strip().split("  #", 1)[0]


def likeliest(
    a: Sequence[str], b: Sequence[str], weight: Callable[[str, str], float]
) -> list[tuple[int, int]]:
    """The pairs (i, j), in order on both sides, that together weigh the most.

    A longest common subsequence where a pair counts for its weight, not for one: so a
    long line that changed a little counts for more than a short one that did not.
    """
    n, m = len(a), len(b)
    # best[i][j]: the most weight that pairs between a[i:] and b[j:] can have
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    gain: dict[tuple[int, int], float] = {}
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            score = max(best[i + 1][j], best[i][j + 1])
            if w := weight(a[i], b[j]):
                gain[i, j] = w
                score = max(score, best[i + 1][j + 1] + w)
            best[i][j] = score
    chosen: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if (i, j) in gain and best[i][j] == best[i + 1][j + 1] + gain[i, j]:
            chosen.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return chosen


def resemblance(a: str, b: str) -> float:
    """The characters two changed lines share, if one may stand beside the other; else 0.

    Looser than :func:`kinship`: a line that took another's place, such as the send of
    a callback and the ``sock_sendall`` of a coroutine.  But a comment never stands
    beside code, and two lines with little in common stay apart (``RESEMBLE``).
    """
    if a.startswith("#") != b.startswith("#"):
        return 0.0
    ratio = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    return weigh(ratio, a, b) if ratio >= RESEMBLE else 0.0


def kinship(a: str, b: str) -> float:
    """The characters two lines share, if they are alike enough to be one line edited."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return 0.0  # cheap upper bounds first: most pairs of lines are not alike at all
    ratio = matcher.ratio()
    return weigh(ratio, a, b) if ratio >= SIMILAR else 0.0


def weigh(ratio: float, a: str, b: str) -> float:
    """What pairing two lines is worth: their length, times their likeness cubed.

    Cubed, so that one pair clearly alike outweighs two pairs barely alike: stage 1's
    ``retrying`` and ``record_failure`` calls look enough like each other that, counted
    by shared characters alone, each would be paired with the other's successor.
    """
    return ratio**3 * (len(a) + len(b)) / 2


def compare(left_path: Path, right_path: Path) -> SideBySide:
    """Compare two crawler files: pieces, pairs, aligned rows."""
    left = pieces(left_path.read_text(encoding="utf-8"), str(left_path))
    right = pieces(right_path.read_text(encoding="utf-8"), str(right_path))
    pairs, problems = pair(left, right, table_for(stage_of(left_path), stage_of(right_path)))
    sections = tuple(
        Section(
            p.left,
            p.right,
            p.left_label,
            p.right_label,
            line_ranges(p.left, left),
            line_ranges(p.right, right),
            p.why,
            tuple(
                align(
                    [line for piece in p.left for line in piece.lines],
                    [line for piece in p.right for line in piece.lines],
                )
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

    Pieces next to each other in the file (no other piece between them) make one range:
    a whole class is one range, not one per method.
    """
    spans: list[list[int]] = []
    names = {piece.name for piece in chosen}
    for piece in every:  # in the order of the file
        first, last = piece.lines[0].number, piece.lines[-1].number
        if piece.name not in names:
            spans.append([])  # a piece between: whatever comes next starts a new range
        elif spans and spans[-1]:
            spans[-1][1] = last
        else:
            spans.append([first, last])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in filter(None, spans))


def counts(rows: Iterable[Row]) -> dict[str, int]:
    """How many rows carry each mark."""
    found = dict.fromkeys((SAME, CHANGED, LEFT_ONLY, RIGHT_ONLY), 0)
    for row in rows:
        found[row.mark] += 1
    return found


# --- output: the terminal --------------------------------------------------------------

#: Narrower than this, not one line of code is legible: a narrower width is taken as this.
MIN_WIDTH = 40
LEGEND = (
    f"'{SAME}' the same (indentation aside)  '{CHANGED}' changed  "
    f"'{LEFT_ONLY}' only on the left  '{RIGHT_ONLY}' only on the right"
)

#: One side of a terminal line: a line number (or nothing) and the text in the column.
Cell = tuple[str, str]


@dataclass(frozen=True)
class Columns:
    """The terminal's layout: a line number and a column of code on each side, a mark between."""

    width: int
    digits: int  # of the largest line number
    wrap: bool  # wrap code longer than its column, or cut it short

    @property
    def column(self) -> int:
        """The width of one column of code."""
        return (self.width - 2 * self.digits - 5) // 2  # 5: three spaces and the mark

    def fit(self, text: str, code: bool = True) -> list[str]:
        """One side's text as the rows it takes in its column.

        A wrapped line of code goes on indented past its own indentation, so that it
        cannot be taken for the next line.  Prose (a heading) always wraps.
        """
        if len(text) <= self.column:
            return [text]
        if code and not self.wrap:
            return [text[: self.column - 1] + "…"]
        hang = " " * min(len(text) - len(text.lstrip()) + 4, self.column // 2) if code else ""
        return textwrap.wrap(text, self.column, subsequent_indent=hang, break_on_hyphens=False)

    def cells(self, line: Line | None, indent: int) -> list[Cell]:
        """A line of code in its column: numbered on its first row only."""
        if line is None:
            return [("", "")]
        rows = self.fit(line.text[indent:])
        return [(str(line.number), rows[0])] + [("", rest) for rest in rows[1:]]

    def lines(self, left: list[Cell], mark: str, right: list[Cell]) -> list[str]:
        """Terminal lines for two sides; the shorter side goes on with empty cells."""
        out = []
        for k in range(max(len(left), len(right))):
            left_no, left_text = left[k] if k < len(left) else ("", "")
            right_no, right_text = right[k] if k < len(right) else ("", "")
            d, c = self.digits, self.column
            line = f"{left_no:>{d}} {left_text:<{c}} {mark} {right_no:>{d}} {right_text}"
            out.append(line.rstrip())
        return out

    def prose(self, left: str, right: str) -> list[str]:
        """Text in the two columns, where the code goes: names of files and pieces."""
        return self.lines(
            [("", text) for text in self.fit(left, code=False)],
            " ",
            [("", text) for text in self.fit(right, code=False)],
        )


def common_indent(pieces: Sequence[Piece]) -> int:
    """The indentation every line of these pieces has: a method's four spaces, say."""
    lines = [line.text for piece in pieces for line in piece.lines]
    return min((len(text) - len(text.lstrip()) for text in lines), default=0)


def heading(label: str, lines: str) -> str:
    """What a section's heading says of one side: the names, and the lines they span."""
    return f"{label} (lines {lines})" if label else ""


def render_text(view: SideBySide, width: int, wrap: bool = True) -> str:
    """Two columns and a mark between them, no line longer than ``width``.

    Each column loses its section's common indentation (a method's four spaces), which
    would only eat the width.  A line longer than its column is wrapped onto rows of its
    own, with no line number; or cut short with "…" when ``wrap`` is false.
    """
    numbers = [line.number for s in view.sections for p in (*s.left, *s.right) for line in p.lines]
    digits = len(str(max(numbers, default=1)))
    width = max(width, MIN_WIDTH)
    layout = Columns(width, digits, wrap)
    out = layout.prose(view.left_name, view.right_name)
    out += textwrap.wrap(LEGEND, width)
    for section in view.sections:
        out.append("=" * width)
        out += layout.prose(
            heading(section.left_label, section.left_lines),
            heading(section.right_label, section.right_lines),
        )
        out += textwrap.wrap(section.why, width, initial_indent="  ", subsequent_indent="  ")
        out.append("-" * width)
        indents = common_indent(section.left), common_indent(section.right)
        for row in section.rows:
            left, right = layout.cells(row.left, indents[0]), layout.cells(row.right, indents[1])
            out += layout.lines(left, row.mark, right)
    out.append("=" * width)
    out += textwrap.wrap(summary(view), width)
    for problem in view.problems:
        out += textwrap.wrap(f"table: {problem}", width)
    return "\n".join(out) + "\n"


def summary(view: SideBySide) -> str:
    """How many rows of each kind the whole comparison has."""
    found = counts(row for section in view.sections for row in section.rows)
    return (
        f"{found[SAME]} lines the same, {found[CHANGED]} changed, "
        f"{found[LEFT_ONLY]} only on the left, {found[RIGHT_ONLY]} only on the right."
    )


# --- output: one HTML page -------------------------------------------------------------

# Inline and self-contained: no script, no font, no picture, nothing fetched from anywhere,
# so the page works from a USB stick and in a classroom without a network.
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #1f2328; background: #fff; }
h1 { font-size: 1.3rem; }
.legend span { font-family: ui-monospace, Menlo, Consolas, monospace; padding: 0 .4em; }
section { margin: 2rem 0; }
table { width: 100%; border-collapse: collapse; table-layout: fixed;
        font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
col.n { width: 3.2em; } col.m { width: 1.6em; }
th { text-align: left; font-family: system-ui, sans-serif; font-size: 1rem;
     border-bottom: 2px solid #d0d7de; padding: .3em .4em; vertical-align: bottom; }
th small { color: #656d76; font-weight: normal; }
td { vertical-align: top; padding: 0 .4em; }
td.c { white-space: pre-wrap; overflow-wrap: anywhere; padding-left: calc(.4em + 4ch);
       text-indent: -4ch; }  /* a wrapped line goes on indented */
td.n { color: #8c959f; text-align: right; }
td.m { text-align: center; color: #57606a; }
td.none { background: #f6f8fa; }
tr.changed td.c, .legend .changed { background: #fff8c5; }
tr.left td.c.l, .legend .left { background: #ffebe9; }
tr.right td.c.r, .legend .right { background: #dafbe1; }
del { background: #ffc1bd; text-decoration: none; }
ins { background: #aceebb; text-decoration: none; }
p.why { margin: .4em 0 .6em; max-width: 60rem; }
"""

ROW_CLASS = {SAME: "same", CHANGED: "changed", LEFT_ONLY: "left", RIGHT_ONLY: "right"}


def render_html(view: SideBySide) -> str:
    """One page: the two files in two columns, a section per pair, changes highlighted.

    In a pair of changed lines that resemble each other, the characters that differ
    are marked too (``<del>`` on the left, ``<ins>`` on the right).
    """
    esc = html.escape
    title = f"{view.left_name} beside {view.right_name}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        '<p class="legend">'
        + " ".join(
            f'<span class="{ROW_CLASS[mark]}">{esc(mark)}</span> {esc(meaning)}'
            for mark, meaning in (
                (SAME, "the same (indentation aside)"),
                (CHANGED, "changed"),
                (LEFT_ONLY, "only on the left"),
                (RIGHT_ONLY, "only on the right"),
            )
        )
        + f". {esc(summary(view))}</p>",
    ]
    for section in view.sections:
        out.append("<section><table>")
        out.append('<colgroup><col class="n"><col><col class="m"><col class="n"><col></colgroup>')
        heads = []
        for label, lines in (
            (section.left_label, section.left_lines),
            (section.right_label, section.right_lines),
        ):
            lines = f"<small>lines {esc(lines)}</small>" if label else ""
            heads.append(f'<th colspan="2">{esc(label)} {lines}</th>')
        out.append(f"<thead><tr>{heads[0]}<th></th>{heads[1]}</tr></thead><tbody>")
        if section.why:
            out.append(f'<tr><td colspan="5"><p class="why">{esc(section.why)}</p></td></tr>')
        for row in section.rows:
            left, right = cell_html(row)
            out.append(
                f'<tr class="{ROW_CLASS[row.mark]}">'
                f"{number_html(row.left)}{code_html(row.left, left, 'l')}"
                f'<td class="m">{esc(row.mark)}</td>'
                f"{number_html(row.right)}{code_html(row.right, right, 'r')}</tr>"
            )
        out.append("</tbody></table></section>")
    for problem in view.problems:
        out.append(f"<p>table: {esc(problem)}</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def cell_html(row: Row) -> tuple[str, str]:
    """The escaped code of a row's two sides, with the words that differ marked if alike.

    Words, not characters: compared character by character, ``stage1_callbacks`` and
    ``stage2_generators`` would come out as confetti of shared letters.  Indentation is
    left out of the comparison, as it is when the lines are paired.
    """
    left = row.left.text if row.left else ""
    right = row.right.text if row.right else ""
    if not row.similar:
        return html.escape(left), html.escape(right)
    left_indent, left_words = split_words(left)
    right_indent, right_words = split_words(right)
    marked_left, marked_right = [left_indent], [right_indent]
    matcher = difflib.SequenceMatcher(None, left_words, right_words, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a = html.escape("".join(left_words[i1:i2]))
        b = html.escape("".join(right_words[j1:j2]))
        if tag == "equal":
            marked_left.append(a)
            marked_right.append(b)
        else:
            marked_left.append(f"<del>{a}</del>" if a else "")
            marked_right.append(f"<ins>{b}</ins>" if b else "")
    return "".join(marked_left), "".join(marked_right)


WORDS = re.compile(r"\w+|\s+|[^\w\s]")


def split_words(text: str) -> tuple[str, list[str]]:
    """A line's indentation, and the rest as words, runs of spaces and single symbols."""
    rest = text.lstrip()
    return text[: len(text) - len(rest)], WORDS.findall(rest)


def number_html(line: Line | None) -> str:
    """The line-number cell of one side."""
    return f'<td class="n">{line.number}</td>' if line else '<td class="n"></td>'


def code_html(line: Line | None, content: str, side: str) -> str:
    """The code cell of one side; a side with no line is greyed."""
    return f'<td class="c {side}">{content}</td>' if line else f'<td class="c {side} none"></td>'


# --- the command line ------------------------------------------------------------------


def find(name: str) -> Path:
    """The crawler file a name stands for: a stage (stage1), its folder, or a path."""
    if name in STAGES:
        return ROOT / STAGES[name] / "crawler.py"
    path = Path(name) if Path(name).exists() else ROOT / name
    return path / "crawler.py" if path.is_dir() else path


def short_name(path: Path) -> str:
    """A name for a file in another file's name: its stage ("stage1"), else its folder."""
    return stage_of(path) or path.parent.name or path.stem


def unified(left: Path, right: Path) -> str:
    """The two files as a unified diff, the format of ``diff -u``."""
    old = left.read_text(encoding="utf-8").splitlines()
    new = right.read_text(encoding="utf-8").splitlines()
    names = display_name(left), display_name(right)
    return "".join(line + "\n" for line in difflib.unified_diff(old, new, *names, lineterm=""))


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two stages' crawlers; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="nox -s diff --",
        description="Two stages' crawler.py side by side, aligned function by function.",
    )
    parser.add_argument(
        "stages",
        nargs="*",
        metavar="STAGE",
        help="two of stage1, stage2, stage3, or paths to crawler files (default: stage2 stage3)",
    )
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
    paths = [find(name) for name in args.stages or ["stage2", "stage3"]]
    for path in paths:
        if not path.is_file():
            parser.error(f"no {path}: name two of {', '.join(STAGES)}, or two crawler files")
    left, right = paths
    try:
        if args.unified:
            sys.stdout.write(unified(left, right))
            return 0
        try:
            view = compare(left, right)
        except SyntaxError as exc:  # a file being edited: the unified diff still works
            print(f"{exc.filename}:{exc.lineno}: {exc.msg}; try --unified", file=sys.stderr)
            return 1
        if args.html:
            out = args.out or OUT / f"diff-{short_name(left)}-{short_name(right)}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(render_html(view), encoding="utf-8")
            print(f"wrote {display_name(out)}")
            return 0
        width = args.width or shutil.get_terminal_size().columns
        if isinstance(sys.stdout, io.TextIOWrapper):  # a console that cannot show "…" gets "?"
            sys.stdout.reconfigure(errors="replace")
        sys.stdout.write(render_text(view, width, wrap=not args.truncate))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`| head`, a pager quit early): say no more, and no error, for
        # the reader had seen what it wanted.  stdout goes to /dev/null first, or
        # Python's last flush at exit would complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
