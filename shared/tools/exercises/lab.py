"""The labs' breakage, made and taken back by Python: `lab list`, `lab apply NAME`, `lab undo NAME`.

A lab guide (shared/tools/exercises/labs/NN-name.md) breaks something in one of two ways,
in its "Break it" section: a diff, or a script to save ("Save this script as
`out/labs/NAME.py`").  `apply` makes that change and `undo` takes it back; the script is
written and then deleted.  No bash, no git: the same command on Windows as anywhere else.

A guide's diff carries no line numbers: each hunk's header names the function it changes
(``@@ Crawler.work @@``), and the hunk is found by its own text, the lines it keeps and the
lines it removes, which must stand together at exactly one place in the file.  So a stage
can gain or lose lines anywhere else and every guide still applies; a hunk whose code
changed, or that could go in two places, is refused and nothing changes.  Undo applies the
diff backwards: the kept and the added lines, found the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from shared.tools.exercises.catalog import ROOT
from shared.tools.exercises.messages import say

LABS = ROOT / "shared" / "tools" / "exercises" / "labs"
#: A hunk's header: ``@@ Crawler.work @@``, the function (or ``imports``) it changes.
HUNK = re.compile(r"^@@ (.*?) ?@@")


class LabError(Exception):
    """A lab that cannot be applied or undone here, and why: in English, as messages.py's
    `say("en", ...)` words it; the command line says it again in the reader's language."""


class DiffMismatch(LabError):
    """A guide's diff no longer matches the code it says it changes."""


@dataclass
class Hunk:
    """One hunk of a diff: where it is (its header's name), the old and the new lines."""

    where: str  # what its header names: `Crawler.work`; for a reader, not for finding it
    old: list[str]  # the lines kept and the lines removed, in order
    new: list[str]  # the lines kept and the lines added, in order

    def backwards(self) -> Hunk:
        """The hunk that undoes this one, once it has been applied."""
        return Hunk(self.where, self.new, self.old)


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language in a guide's text, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def section(text: str, heading: str) -> str:
    """The text under a ``## heading``, up to the next one."""
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def parse_diff(diff: str) -> dict[str, list[Hunk]]:
    """The hunks of a diff, per file (the path after ``+++ b/``).

    A hunk runs from its ``@@ name @@`` header to the next header or file; each of its
    lines is kept (`` ``), removed (``-``) or added (``+``); an empty line is a kept empty
    line (an editor may have stripped its space).  It must start and end with a kept line:
    those say where it goes.
    """
    files: dict[str, list[Hunk]] = {}
    hunks: list[Hunk] = []
    tags: list[str] = []

    def close() -> None:  # the hunk just read must be held at both ends by kept lines
        if hunks and (not tags or tags[0] != " " or tags[-1] != " "):
            raise DiffMismatch(say("en", "error.hunk-edges", hunk=f"@@ {hunks[-1].where} @@"))
        tags.clear()

    reading = False  # inside a hunk, its lines still coming
    for line in diff.splitlines():
        header = HUNK.match(line)
        if header or line.startswith(("--- a/", "+++ b/")):
            if reading:
                close()
            reading = header is not None
            if header:
                hunks.append(Hunk(header[1], [], []))
            elif line.startswith("+++ b/"):
                hunks = files.setdefault(line.removeprefix("+++ b/"), [])
            continue
        tag, text = (line[:1] or " "), line[1:]
        if not reading or tag not in (" ", "-", "+"):
            raise DiffMismatch(say("en", "error.hunk-line", line=repr(line)))
        tags.append(tag)
        if tag in " -":
            hunks[-1].old.append(text)
        if tag in " +":
            hunks[-1].new.append(text)
    if reading:
        close()
    return files


def locate(path: str, lines: list[str], hunk: Hunk) -> int:
    """Where a hunk's old lines stand in a file's lines (counted from 0): the one place they
    do, or DiffMismatch if there is none, or more than one."""
    size = len(hunk.old)
    places = [at for at in range(len(lines) - size + 1) if lines[at : at + size] == hunk.old]
    if not places:
        raise DiffMismatch(say("en", "error.hunk-nowhere", path=path, where=hunk.where))
    if len(places) > 1:
        raise DiffMismatch(
            say("en", "error.hunk-many", path=path, where=hunk.where, count=len(places))
        )
    return places[0]


def apply_hunks(path: str, text: str, hunks: list[Hunk]) -> str:
    """Apply hunks to a file's text, one after the other, each where its own lines are."""
    lines = text.splitlines()
    for hunk in hunks:
        at = locate(path, lines, hunk)
        lines[at : at + len(hunk.old)] = hunk.new
    return "\n".join(lines) + "\n"


@dataclass
class Lab:
    """One lab guide, and the change its "Break it" section makes."""

    guide: Path
    diff: str | None  # the first diff of "Break it"; None for a lab that saves a script
    script: str | None  # the script's text, for a lab that saves one
    script_path: str | None  # where the guide says to save it, from the repository's root

    @property
    def name(self) -> str:
        """The guide's name without .md: 01-forget-task-done."""
        return self.guide.stem

    def files(self) -> list[str]:
        """The repository's files the lab changes, or the script it saves."""
        if self.diff is not None:
            return sorted(parse_diff(self.diff))
        return [self.script_path] if self.script_path else []


def guides(labs: Path = LABS) -> list[Path]:
    """Every lab guide, in order: NN-name.md (a translation, NN-name.zh-CN.md, is not a lab)."""
    return sorted(path for path in labs.glob("[0-9][0-9]-*.md") if path.suffixes == [".md"])


def read_lab(guide: Path) -> Lab:
    """The change a guide's "Break it" section makes."""
    text = guide.read_text(encoding="utf-8")
    breaking = section(text, "## Break it")
    diffs = blocks(breaking, "diff")
    if diffs:
        return Lab(guide, diffs[0], None, None)
    scripts = blocks(breaking, "python")
    saved = re.search(r"Save this script as\s+`(out/labs/\w+\.py)`", breaking)
    if not (scripts and saved):
        raise LabError(say("en", "error.no-break", guide=guide.name))
    return Lab(guide, None, scripts[0], saved[1])


def find_lab(name: str, labs: Path = LABS) -> Lab:
    """The lab called ``name``: its number (1, 01), its guide's name, or that without NN-."""
    for guide in guides(labs):
        number, _, title = guide.stem.partition("-")
        if name in (guide.stem, guide.name, title, number) or name == number.lstrip("0"):
            return read_lab(guide)
    names = ", ".join(guide.stem for guide in guides(labs))
    raise LabError(say("en", "error.no-lab", name=repr(name), names=names))


def apply(lab: Lab, root: Path = ROOT) -> list[str]:
    """Make the lab's change in the repository at ``root``; return the files changed."""
    if lab.diff is None:
        assert lab.script is not None and lab.script_path is not None
        target = root / lab.script_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(lab.script, encoding="utf-8")
        return [lab.script_path]
    return _patch(lab, root, backwards=False)


def undo(lab: Lab, root: Path = ROOT) -> list[str]:
    """Take the lab's change back; return the files restored or removed."""
    if lab.diff is None:
        assert lab.script_path is not None
        (root / lab.script_path).unlink(missing_ok=True)
        return [lab.script_path]
    return _patch(lab, root, backwards=True)


def _patch(lab: Lab, root: Path, backwards: bool) -> list[str]:
    """Apply the lab's diff, forwards or backwards, to every file or to none."""
    assert lab.diff is not None
    texts, crlf = {}, {}
    for path, hunks in parse_diff(lab.diff).items():
        # Bytes, not text mode: a file checked out with Windows line ends keeps them.
        raw = (root / path).read_bytes().decode("utf-8")
        crlf[path] = "\r\n" in raw
        text = raw.replace("\r\n", "\n")
        wanted = [hunk.backwards() for hunk in hunks] if backwards else hunks
        try:
            texts[path] = apply_hunks(path, text, wanted)
        except DiffMismatch as mismatch:
            # Already in the state asked for?  Then say so, rather than that the code changed.
            other = hunks if backwards else [hunk.backwards() for hunk in hunks]
            try:
                apply_hunks(path, text, other)
            except DiffMismatch:
                # Neither way fits: say which hunk fits nowhere (or in several places).
                raise mismatch from None
            state = "error.lab-not-applied" if backwards else "error.lab-applied"
            raise LabError(say("en", state, name=lab.name, path=path)) from None
    for path, text in texts.items():  # written only once every file took its hunks
        (root / path).write_bytes((text.replace("\n", "\r\n") if crlf[path] else text).encode())
    return sorted(texts)
