"""Two stages' crawlers side by side, function beside function: ``nox -s diff -- stage1 stage2``.

A plain diff of stage 1 against stage 2 is one hunk: the code moved as well as changed
(stage 1's ``Fetcher`` became ``Crawler.request``).  So each file is cut with :mod:`ast`
into pieces (functions, methods, a class's own lines, module code), paired by name or by
:data:`STAGE1_TO_LATER`, and each pair's lines are aligned with difflib, ``yield from
self.q.get()`` beside ``await self.q.get()``: two columns, a page (``--html``), or
difflib's unified diff (``--unified``).  Standard library only: nox runs it on its Python."""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import functools
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
from typing import NamedTuple

from shared import STAGES
from shared.language import LANGUAGES, add_help_option, chosen_language, help_in, wrap_columns
from shared.tools.language import Phrasebook, display_width

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out"  # where --html writes by default: git ignores it
STAGE_OF = {package: short for short, package in STAGES.items()}  # stage1_callbacks: stage1

#: The marks of the middle column, and what they say about the row.
SAME, CHANGED, LEFT_ONLY, RIGHT_ONLY = " ", "|", "<", ">"
MEANING = {SAME: "the same (indentation aside)", CHANGED: "changed"}
MEANING |= {LEFT_ONLY: "only on the left", RIGHT_ONLY: "only on the right"}
#: Two changed lines stand side by side if this share of their characters match (difflib's
#: ratio): one took the other's place; any lower, and chance (``self.``, brackets) decides.
#: From SIMILAR on they are one line edited, and the words that differ are marked.
RESEMBLE, SIMILAR = 0.4, 0.6


#: What the tool says, in Chinese (--lang zh-CN, or a Chinese locale).
BOOK = Phrasebook(Path(__file__).with_name("sidebyside.zh-CN.json"))
say = BOOK.say


def text_wrap(text: str, width: int, lang: str, indent: str = "") -> list[str]:
    """Lines of at most ``width`` columns: by spaces in English, by display width in Chinese."""
    if lang != "zh-CN":
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)
    return [indent + line for line in wrap_columns(text, width - len(indent))] if text else []


@dataclass(frozen=True)
class Correspondence:
    """Pieces of stage 1 (``Fetcher.*``: a class and its methods), their heirs, and why."""

    stage1: tuple[str, ...]
    later: tuple[str, ...]
    why: str


#: The chapter's correspondences between names that differ.  Each side is aligned in the
#: order given: one try's callbacks against request first, the retries against fetch's loop.
STAGE1_TO_LATER = (
    Correspondence(
        ("Fetcher.*",),
        ("Crawler.request", "Crawler.fetch"),
        "A try's chain of callbacks, its state in attributes, becomes one coroutine with local "
        "variables (request); the retries in start, _on_timeout and _fail, the loop in fetch.",
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
        "Stage 1 calls work() again after each fetch (finished); only the loop sees a callback's "
        "exception (callback_failed). In 2 and 3, workers wait at the queue, a try round fetch.",
    ),
    Correspondence(
        ("Crawler.park",),
        ("Crawler.robots",),
        "Pages parked by hand until their robots.txt is in, against pages that wait on the "
        "Task fetching it.",
    ),
    Correspondence(
        ("Crawler.cancel",),
        (),
        "Ctrl-C: stage 1 closes each Fetcher by hand; stages 2 and 3 cancel the main task (stage "
        "2's crawl arranges it, 3's asyncio.Runner), and Crawler.crawl's finally the workers.",
    ),
)


class Line(NamedTuple):
    """One line of a file: its number (from 1) and its text, without the newline."""

    number: int
    text: str


@dataclass(frozen=True)
class Piece:
    """A function, a method, a class's own lines or module code: its lines, blank ones out."""

    name: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Row:
    """A line on either side, or on one only, and a mark; ``similar``: one line edited."""

    mark: str
    left: Line | None
    right: Line | None
    similar: bool = False


@dataclass(frozen=True)
class Section:
    """Pieces on each side that do one job (a side may have none), their names, why they
    pair (from the table), the lines they span ("208-219, 239-245"), and their rows."""

    left: tuple[Piece, ...]
    right: tuple[Piece, ...]
    labels: tuple[str, str]  # "Crawler.work + Crawler.finished", "Crawler.work"
    why: str = ""
    spans: tuple[str, str] = ("", "")
    rows: tuple[Row, ...] = ()


@dataclass(frozen=True)
class SideBySide:
    """Two files, compared section by section, and the table entries that did not apply."""

    left_name: str
    right_name: str
    sections: tuple[Section, ...]
    problems: tuple[str, ...]


def pieces(source: str, filename: str = "<unknown>") -> list[Piece]:
    """Cut a module into its functions, methods, classes' own lines and module code.

    Every non-blank line is in one piece; comments right above a definition introduce it.
    """
    text = source.splitlines()
    owner: dict[int, str] = {}  # line number -> the name of the piece it belongs to

    def claim(body: Iterable[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                while first > 1 and text[first - 2].startswith(" " * node.col_offset + "#"):
                    first -= 1
                lines = range(first, (node.end_lineno or first) + 1)
                owner.update(dict.fromkeys(lines, prefix + node.name))
                if isinstance(node, ast.ClassDef):
                    claim(node.body, f"{prefix}{node.name}.")  # its methods leave its own lines

    claim(ast.parse(source, filename).body, "")
    found, name = dict[str, list[Line]](), ""
    for number, line in enumerate(text, start=1):
        if line.strip():  # module code: each run between definitions is a piece of its own
            after = name if name.startswith("<module>") else f"<module> after {name}"
            name = owner.get(number) or (after if "<module>" in found else "<module>")
            found.setdefault(name, []).append(Line(number, line.expandtabs()))
    return [Piece(name, tuple(lines)) for name, lines in found.items()]


def pair(
    left: list[Piece], right: list[Piece], table: list[Correspondence]
) -> tuple[list[Section], list[str]]:
    """Pair two files' pieces: by the table first, then by name; the rest stay alone.

    Returns the pairs (no rows yet) in reading order, and the table entries not used: an
    entry with a name missing or taken is skipped whole, for half of one would be wrong.
    """
    sections, problems = [], []
    free = [{p.name: p for p in left}, {p.name: p for p in right}]  # not paired yet
    for entry in table:
        (mine, lost), (theirs, lost_too) = expand(entry.stage1, left), expand(entry.later, right)
        sides = mine, theirs
        twice = [p.name for k in (0, 1) for p in sides[k] if p.name not in free[k]]
        names = " + ".join(entry.stage1), " + ".join(entry.later)
        if lost or lost_too or twice:
            missing, taken = ", ".join(lost + lost_too) or "-", ", ".join(twice) or "-"
            problems.append(f"{' = '.join(names)} not used: missing {missing}; paired {taken}")
            continue
        for k in (0, 1):
            for piece in sides[k]:
                del free[k][piece.name]
        sections.append(Section(tuple(mine), tuple(theirs), names, entry.why))
    for piece in free[0].values():  # by name
        match = (free[1].pop(piece.name),) if piece.name in free[1] else ()
        sections.append(Section((piece,), match, (piece.name, piece.name if match else "")))
    sections += [Section((), (piece,), ("", piece.name)) for piece in free[1].values()]

    def start(side: Sequence[Piece]) -> int:
        return min(piece.lines[0].number for piece in side)

    # The left file's order; what is only on the right goes where the right file has it:
    # before the first pair whose right side comes after it there.
    ordered = sorted((s for s in sections if s.left), key=lambda s: start(s.left))
    for alone in sorted((s for s in sections if not s.left), key=lambda s: start(s.right)):
        later = (
            i for i, s in enumerate(ordered) if start(s.right or alone.right) > start(alone.right)
        )
        ordered.insert(next(later, len(ordered)), alone)
    return ordered, problems


def expand(names: Sequence[str], every: Sequence[Piece]) -> tuple[list[Piece], list[str]]:
    """The pieces a table entry names, in its order, and the names with no piece (or class)."""
    chosen, missing = list[Piece](), list[str]()
    for name in names:
        cls = name.removesuffix(".*")  # a class: its own lines and all its methods
        found = [p for p in every if p.name == cls or p.name.partition(".")[0] == cls != name]
        chosen += found
        missing += [] if found and found[0].name == cls else [name]
    return chosen, missing


def align(left: Sequence[Line], right: Sequence[Line]) -> list[Row]:
    """Align two runs of lines: the same lines side by side, changed ones beside their kin.

    Indentation is left out: a move into a ``with`` block changes it, not the code.  Short
    lines (``try:``, ``return``) are junk to difflib: an alignment hung on one is an accident.
    """
    a, b = [x.text.strip() for x in left], [y.text.strip() for y in right]
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(lambda s: len(s) < 8, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [Row(SAME, x, y) for x, y in zip(left[i1:i2], right[j1:j2], strict=True)]
        else:
            rows += changed(left[i1:i2], right[j1:j2])
    return rows


def changed(left: Sequence[Line], right: Sequence[Line]) -> list[Row]:
    """Rows for a stretch where the two sides differ: each changed line beside its kin.

    The lines paired are those at least ``RESEMBLE`` alike, in order on both sides, that
    share the most characters in all (as difflib counts them): a longest common subsequence
    in which a long line changed a little outweighs a short one unchanged.
    """
    # Compared without trailing comments: stages 2 and 3 say where a coroutine suspends at the
    # end of the very lines that changed (`sock_recv(sock, 64 * 1024)  # suspends: ...`).
    # "  #" is PEP 8's; a string could imitate it: a worse pairing then, nothing more.  And a
    # comment never stands beside code.
    a, b = ([x.text.strip().split("  #")[0] for x in side] for side in (left, right))
    ratio, shared, matcher = {}, {}, difflib.SequenceMatcher(autojunk=False)
    for (j, y), (i, x) in itertools.product(enumerate(b), enumerate(a)):
        matcher.set_seqs(x, y)  # it keeps what it learnt of y while only x changes: faster
        alike = x.startswith("#") == y.startswith("#") and matcher.real_quick_ratio() >= RESEMBLE
        ratio[i, j] = matcher.ratio() if alike and matcher.quick_ratio() >= RESEMBLE else 0.0
        shared[i, j] = ratio[i, j] * (len(x) + len(y)) / 2 if ratio[i, j] >= RESEMBLE else 0.0
    best = [[0.0] * (len(b) + 1) for _ in range(len(a) + 1)]  # the most a[i:], b[j:] can share
    for i, j in itertools.product(reversed(range(len(a))), reversed(range(len(b)))):
        paired = best[i + 1][j + 1] + shared[i, j] if shared[i, j] else 0.0
        best[i][j] = max(best[i + 1][j], best[i][j + 1], paired)
    rows, i, j = [], 0, 0
    while i < len(a) or j < len(b):  # walk the table along the choices that made it
        if (gain := shared.get((i, j))) and best[i][j] == best[i + 1][j + 1] + gain:
            mark = SAME if left[i].text.strip() == right[j].text.strip() else CHANGED  # short
            rows.append(Row(mark, left[i], right[j], mark == CHANGED and ratio[i, j] >= SIMILAR))
            i, j = i + 1, j + 1
        elif i < len(a) and (j == len(b) or best[i][j] == best[i + 1][j]):
            rows.append(Row(LEFT_ONLY, left[i], None))
            i += 1
        else:
            rows.append(Row(RIGHT_ONLY, None, right[j]))
            j += 1
    return rows


def compare(left_path: Path, right_path: Path) -> SideBySide:
    """Compare two crawler files: pieces, pairs, aligned rows."""
    left, right = (pieces(path.read_text("utf-8"), str(path)) for path in (left_path, right_path))
    stages = " ".join(STAGE_OF.get(path.parent.name, "") for path in (left_path, right_path))
    table = list(STAGE1_TO_LATER) if stages in ("stage1 stage2", "stage1 stage3") else []
    if stages in ("stage2 stage1", "stage3 stage1"):  # the table, turned round
        table = [Correspondence(c.later, c.stage1, c.why) for c in STAGE1_TO_LATER]
    pairs, problems = pair(left, right, table)
    sections = []
    for p in pairs:
        rows = align([x for q in p.left for x in q.lines], [y for q in p.right for y in q.lines])
        spans = line_ranges(p.left, left), line_ranges(p.right, right)
        sections.append(replace(p, spans=spans, rows=tuple(rows)))
    names = display_name(left_path), display_name(right_path)
    return SideBySide(*names, tuple(sections), tuple(problems))


def display_name(path: Path) -> str:
    """A file's name relative to the repository when it is in it, else as given."""
    full = path.resolve()
    return full.relative_to(ROOT).as_posix() if full.is_relative_to(ROOT) else str(path)


def line_ranges(chosen: Sequence[Piece], every: Sequence[Piece]) -> str:
    """The lines pieces span, in the file's numbers ("31-178, 230-237"); neighbours: one range."""
    spans: list[list[int]] = []
    for piece in every:  # in the order of the file
        if piece not in chosen:
            spans.append([])  # a piece between: whatever comes next starts a new range
        elif spans and spans[-1]:
            spans[-1][1] = piece.lines[-1].number
        else:
            spans.append([piece.lines[0].number, piece.lines[-1].number])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in filter(None, spans))


def summary(view: SideBySide, lang: str = "en") -> str:
    """How many rows of each kind the whole comparison has."""
    found = collections.Counter(row.mark for section in view.sections for row in section.rows)
    counts = [found[mark] for mark in MEANING]
    kinds = say("{} lines the same, {} changed, {} only on the left, {} only on the right.", lang)
    return kinds.format(*counts)


MIN_WIDTH = 40  # narrower, and no line of code is legible: a narrower width is taken as 40


def break_at(text: str, fits: int) -> int:
    """Where to wrap a line of which ``fits`` characters fit: at the last space, else where a
    name ends (``self.`` | ``session``, ``get(`` | ``url``), never inside an identifier;
    inside one only if it alone is wider than the column."""
    start = len(text) - len(text.lstrip()) + 1  # past the indentation: no empty first row
    space = text.rfind(" ", start, fits + 1)
    if space > 0:
        return space
    word = re.compile(r"\w")
    ends = [
        k
        for k in range(fits, start - 1, -1)
        if not (word.match(text[k - 1]) and word.match(text[k]))
    ]
    return ends[0] if ends else fits


def render_text(view: SideBySide, width: int, wrap: bool = True, lang: str = "en") -> str:
    """Two columns and a mark between them, no line longer than ``width``.

    Each column loses its section's common indentation (a method's four spaces).  A line
    longer than its column wraps onto rows of its own, unnumbered and indented past its own
    indentation so as not to pass for the next line; or is cut with "…" if not ``wrap``.
    """
    every = [line for s in view.sections for p in (*s.left, *s.right) for line in p.lines]
    digits = len(str(max((line.number for line in every), default=1)))
    width = max(width, MIN_WIDTH)
    column = (width - 2 * digits - 5) // 2  # 5: three spaces and the mark

    cols = display_width  # East Asian Wide characters (中文) take two columns each

    def fit(text: str, code: bool = True) -> list[str]:  # by columns, not characters
        parts, hang = [], " " * min(len(text) - len(text.lstrip()) + 4, column // 2) * code
        while cols(text) > column:  # break at the last space or token end that fits, or "…"
            head = next(text[:k] for k in range(len(text), 0, -1) if cols(text[:k]) <= column)
            if code and not wrap:
                return [head[:-1] + "…"]
            parts.append(text[: break_at(text, len(head))].rstrip())
            rest = text[len(parts[-1]) :].lstrip()
            name = re.match(r"\w*", rest)  # a long name hangs less, to stay whole
            text = hang[: max(0, column - cols(name[0] if name else ""))] + rest
        return [*parts, text]

    def cells(line: Line | None, indent: int) -> list[tuple[str, str]]:  # number, text
        parts = fit(line.text[indent:]) if line else [""]
        return [(str(line.number) if line and not k else "", p) for k, p in enumerate(parts)]

    def put(left: list[tuple[str, str]], mark: str, right: list[tuple[str, str]]) -> None:
        for (ln, lt), (rn, rt) in itertools.zip_longest(left, right, fillvalue=("", "")):
            lt += " " * (column - cols(lt))  # padded by columns: a line of 中文 aligns too
            out.append(f"{ln:>{digits}} {lt} {mark} {rn:>{digits}} {rt}".rstrip())

    def prose(left: str, right: str) -> None:  # names of files and pieces: always wrapped
        put([("", t) for t in fit(left, False)], " ", [("", t) for t in fit(right, False)])

    out: list[str] = []
    prose(view.left_name, view.right_name)
    legend = "  ".join(f"'{m}' {say(words, lang)}" for m, words in MEANING.items())
    out += text_wrap(legend, width, lang)
    for s in view.sections:
        out.append("=" * width)
        heads = zip(s.labels, s.spans, strict=True)
        lines_of = say("{} (lines {})", lang)
        prose(*(lines_of.format(label, lines) * bool(label) for label, lines in heads))
        out += text_wrap(say(s.why, lang), width, lang, indent="  ")
        out.append("-" * width)
        lines = [[x.text for p in side for x in p.lines] for side in (s.left, s.right)]
        indents = [min((len(x) - len(x.lstrip()) for x in side), default=0) for side in lines]
        for row in s.rows:
            put(cells(row.left, indents[0]), row.mark, cells(row.right, indents[1]))
    out.append("=" * width)
    out += text_wrap(summary(view, lang), width, lang)
    for problem in view.problems:
        out += textwrap.wrap(f"table: {problem}", width)
    return "\n".join(out) + "\n"


CSS = Path(__file__).with_name("sidebyside.css")
ROW_CLASS = {SAME: "same", CHANGED: "changed", LEFT_ONLY: "left", RIGHT_ONLY: "right"}
COLUMNS = '<colgroup><col class="n"><col><col class="m"><col class="n"><col></colgroup>'


def render_html(view: SideBySide, lang: str = "en") -> str:
    """One page: a contents list of the pairs, then a table per pair, changes highlighted.

    Each pair's anchor is its first piece's name (``#crawler-work``), to send a class to.
    """
    title = say("{} beside {}", lang).format(view.left_name, view.right_name)
    esc, ids = html.escape, list[str]()
    for s in view.sections:
        name = re.sub(r"\W+", "-", (s.labels[0] or s.labels[1]).split(" + ")[0].lower())
        ids.append(name.strip("-") + (f"-{len(ids)}" if name.strip("-") in ids else ""))
    legend = [
        f'<span class="{ROW_CLASS[m]}">{esc(m)}</span> {say(w, lang)}' for m, w in MEANING.items()
    ]
    out = [
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS.read_text('utf-8')}</style></head><body>",
        f'<h1 id="contents">{esc(title)}</h1><p class="legend">{" ".join(legend)}{say(".", lang)}',
        f'{esc(summary(view, lang))}</p><nav aria-label="the pairs"><ol>',
    ]
    for id, s in zip(ids, view.sections, strict=True):
        names = " / ".join(esc(n or say("nothing", lang)) for n in s.labels)
        out.append(f'<li><a href="#{id}">{names}</a>')
    out.append("</ol></nav>")
    for id, s in zip(ids, view.sections, strict=True):
        heads = zip(s.labels, s.spans, strict=True)
        small = say("lines {}", lang)
        th = [
            f"{esc(name)} <small>{small.format(lines)}</small>" * bool(name)
            for name, lines in heads
        ]
        out.append(f'<section id="{id}"><table>{COLUMNS}<thead><tr><th colspan="2">{th[0]}</th>')
        out.append('<th><a href="#contents" title="contents">&uarr;</a></th><th colspan="2">')
        out.append(f"{th[1]}</th></tr></thead><tbody>")
        out += [f'<tr><td colspan="5">{esc(say(s.why, lang))}</td></tr>'] if s.why else []
        for row in s.rows:
            cells = [
                f'<td class="n">{x.number}</td><td class="c {side}">{code}</td>'
                if x else f'<td class="n"></td><td class="c {side} none"></td>'
                for x, code, side in zip((row.left, row.right), cell_html(row), "lr", strict=True)
            ]  # fmt: skip
            mark = f'<td class="m">{esc(row.mark)}</td>'
            out.append(f'<tr class="{ROW_CLASS[row.mark]}">{cells[0]}{mark}{cells[1]}</tr>')
        out.append("</tbody></table></section>")
    out += [f"<p>table: {esc(problem)}</p>" for problem in view.problems]
    return "\n".join([*out, "</body></html>"]) + "\n"


WORDS = re.compile(r"\w+|\s+|[^\w\s]")


def cell_html(row: Row) -> tuple[str, str]:
    """The escaped code of a row's two sides, with the words that differ marked if alike.

    Words, not characters: character by character, ``stage1_callbacks`` and
    ``stage2_generators`` would come out as confetti of shared letters.
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


def find(name: str) -> Path:
    """The crawler file a name stands for: a stage (stage1), its folder, or a path."""
    name = f"{STAGES[name]}/crawler.py" if name in STAGES else name
    path = Path(name) if Path(name).exists() else ROOT / name
    return path / "crawler.py" if path.is_dir() else path


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two stages' crawlers; return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = chosen_language(argv)  # read first, so that --help speaks it too
    said = functools.partial(say, lang=lang)
    described = help_in(lang, description=said("Two crawlers side by side."))
    parser = argparse.ArgumentParser("nox -s diff --", **described)
    add = parser.add_argument
    add_help_option(parser, lang)
    add("stages", nargs="*", metavar="STAGE", help=said("stage1, stage2, stage3 or a crawler file"))
    add("--html", action="store_true", help=said("a page instead: out/diff-STAGE-STAGE.html"))
    add("--unified", action="store_true", help=said("a unified diff instead"))
    add("--out", type=Path, metavar="PATH", help=said("where --html writes its page"))
    add("--width", type=int, metavar="N", help=said("columns to fill (default: the terminal's)"))
    add("--truncate", action="store_true", help=said("cut long lines short, not wrapped"))
    add("--lang", choices=LANGUAGES, help=said("the language it speaks (default: the locale's)"))
    args = parser.parse_args(argv)
    if len(args.stages) not in (0, 2):
        parser.error(said("give two stages, for example: stage1 stage2"))
    if (args.out and not args.html) or (args.html and args.unified):
        parser.error(said("--out is where --html writes; --html and --unified: one or the other"))
    left, right = paths = [find(name) for name in args.stages or ["stage2", "stage3"]]
    if missing := [path for path in paths if not path.is_file()]:
        wrong = said("no {}: name two of {}, or two crawler files")
        parser.error(wrong.format(missing[0], ", ".join(STAGES)))
    try:
        if args.unified:
            old, new = (path.read_text("utf-8").splitlines(keepends=True) for path in paths)
            old_name, new_name = (display_name(path) for path in paths)
            sys.stdout.writelines(difflib.unified_diff(old, new, old_name, new_name))
            return 0
        try:
            view = compare(left, right)
        except SyntaxError as exc:  # a file being edited: the unified diff still works
            print(
                f"{exc.filename}:{exc.lineno}: {exc.msg}; {said('try --unified')}", file=sys.stderr
            )
            return 1
        if args.html:
            names = [STAGE_OF.get(p.parent.name) or p.parent.name or p.stem for p in paths]
            out = args.out or OUT / f"diff-{names[0]}-{names[1]}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(render_html(view, lang), encoding="utf-8")
            print(said("wrote {}").format(display_name(out)))
            return 0
        if isinstance(sys.stdout, io.TextIOWrapper):  # a console that cannot show "…" gets "?"
            sys.stdout.reconfigure(errors="replace")
        width = args.width or shutil.get_terminal_size().columns
        sys.stdout.write(render_text(view, width, wrap=not args.truncate, lang=lang))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`| head`): no error; stdout to /dev/null, or the last flush complains.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
