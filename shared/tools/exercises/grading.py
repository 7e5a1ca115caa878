"""`grade NAME DIR [DIR ...]`: re-grade a class with the repository's own tests.

Each folder (a student's workspace or clone of a handout) is first compared with the
teacher's copy: what `start` or `handout` makes now, from this repository.  Every file
but the student's own must be the teacher's (the manifest the folder holds has no say),
and the student's own file must differ from the handout only in the emptied bodies, and
there only as far as a solution needs (studentfile.py).  A folder with anything else
is tampered: the tampered column names each file, and line, and the folder scores 0.

The others are judged as `check` judges them, with the judging files taken from the
repository, in a scratch folder outside it, by the base Python with nothing but the
student's code and a copy of the packages the checks need on its path: no reference
solution is within reach.  Each has a time limit of its own: a student whose code loops
forever is stopped, failed, and the next student's turn comes.
"""

from __future__ import annotations

import csv
import difflib
import importlib.metadata
import io
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from shared.tools.exercises import (
    checking,
    handout,
    manifest,
    sandbox,
    studentfile,
    workspace,
)
from shared.tools.exercises.bodies import body_text
from shared.tools.exercises.catalog import ROOT, Exercise, tasks_in
from shared.tools.exercises.messages import SENTENCES, say
from shared.tools.exercises.reports import graded

#: What a student's folder may hold beside the teacher's files: what its .gitignore keeps
#: out (handout.GITIGNORE), and git's own folder.
LEFT_ALONE = ("__pycache__", ".pytest_cache", ".before-solve", ".venv", ".git")
#: What an editor or a system leaves in a folder it was opened in, not the student's work:
#: files by these names anywhere, folders by these names at the top.
LITTER_FILES = (".DS_Store", "Thumbs.db", "desktop.ini")
LITTER_FOLDERS = (".idea", ".vscode", ".mypy_cache", ".ruff_cache")
#: What files_of says of a file it does not read.
NOT_PLAIN = ("a link", "not a plain file", "too large")


@dataclass
class Row:
    """One student's line of the table."""

    folder: str  # as the teacher named it
    points: dict[int, int]  # by task
    total: int
    most: int
    tampered: list[str]
    problem: str = ""  # why the folder could not be graded, or what else went wrong


def tampering(exercise: Exercise, folder: Path, pristine: Path | None = ROOT) -> list[str]:
    """What the folder changed among the files that judge (and a handout's own files).

    ``pristine`` is the repository, whose files count beside the manifest's; None when
    the tool runs in a handout, where the manifest alone decides, and where a missing
    manifest leaves nothing to compare with: that alone is the report.
    """
    extra = handout.protected(exercise) if pristine and handout.is_handout(folder) else None
    expected, missing = manifest.expected_digests(exercise, folder, pristine, extra)
    found = missing or manifest.tampered(folder, expected, manifest.WATCHED)
    return found + code_tampering(exercise, folder, pristine)


def code_tampering(exercise: Exercise, folder: Path, pristine: Path | None = ROOT) -> list[str]:
    """What the student's own files do beyond the emptied bodies (studentfile.py).

    From the repository, its files say what the handout was; in a handout, its manifest.
    """
    if pristine is not None:
        known = studentfile.facts(exercise)
    else:
        known = manifest.read_code(folder)
        if known is None or not studentfile.readable(known):
            return [say("en", "file.no-outline", path=manifest.MANIFEST)]
    return studentfile.judge_folder(folder, known)


#: The most a file of a student's folder may hold: every file the teacher hands out is
#: far smaller, and a larger one is read no further (a trap, or a file that is not ours).
MAX_FILE = 4 * 1024 * 1024


def files_of(folder: Path) -> dict[str, str]:
    """The digest of every file in ``folder``, by path, what the student may leave out,
    or why it is not a plain file a teacher reads (a link, a device or a pipe, too large).

    Nothing is followed and nothing but a plain file is opened: a link to the teacher's
    reference, a pipe or an endless device is named, never read.
    """
    found = {}
    for top, folders, files in os.walk(folder, followlinks=False):
        here = Path(top)
        # A folder left alone is one at the top (a .venv, .git); deeper, only caches are:
        # a .git inside a package would be copied into the check's tree, links and all.
        skipped = (*LEFT_ALONE, *LITTER_FOLDERS) if here == folder else manifest.CACHES
        folders[:] = sorted(f for f in folders if f not in skipped)
        for name in [*folders, *sorted(files)]:
            path = here / name
            # A name that is not UTF-8 is said with its bytes escaped (a CSV holds text).
            relative = os.fsencode(path.relative_to(folder).as_posix()).decode(
                "utf-8", "backslashreplace"
            )
            if path.suffix in (".pyc", ".pyo") or name in LITTER_FILES:
                continue
            why = studentfile.regular_file(path, MAX_FILE)
            if why == "not a plain file" and path.is_dir() and not path.is_symlink():
                continue  # a folder: os.walk goes into it
            found[relative] = why or manifest.digest(path.read_bytes())
    return found


@dataclass
class Teacher:
    """What grading a class needs once: the teacher's copies, and the packages' folder."""

    exercise: Exercise
    scratch: Path
    copies: dict[tuple[bool, str], dict[str, str]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # the handout's student files

    def copy(self, is_handout: bool, lang: str) -> dict[str, str]:
        """The digests of what `handout` (or `start`, in ``lang``) makes now, by path."""
        key = (is_handout, "en" if is_handout else lang)
        if key not in self.copies:
            folder = self.scratch / f"copy-{len(self.copies)}"
            if is_handout:
                handout.make(self.exercise, folder)
            else:
                workspace.start(self.exercise, folder, lang=key[1])
            self.copies[key] = files_of(folder)
            for target in self.exercise.replace:
                self.texts[target.path] = (folder / target.path).read_text(encoding="utf-8")
        return self.copies[key]

    @property
    def site(self) -> Path:
        """A folder of the packages the checks need, copied out of this environment."""
        folder = self.scratch / "site"
        if not folder.exists():
            packages(folder)
        return folder


def against_teacher(exercise: Exercise, folder: Path, teacher: Teacher) -> list[str]:
    """Every file but the student's own that differs from the teacher's copy, by name."""
    marker = workspace.read_marker(folder) or {}
    lang = marker.get("lang")
    lang = lang if isinstance(lang, str) and lang in SENTENCES else "en"  # no trap of a name
    theirs = teacher.copy(handout.is_handout(folder), lang)
    mine = files_of(folder)
    own = {target.path for target in exercise.replace} | {workspace.MARKER}
    found = []
    for path in sorted((set(theirs) | set(mine)) - own):
        if path not in mine:
            found.append(say("en", "file.removed", path=path))
        elif path not in theirs:
            found.append(say("en", "file.added", path=path))
        elif mine[path] in NOT_PLAIN:
            found.append(say("en", "file.not-plain", path=path, why=mine[path]))
        elif mine[path] != theirs[path]:
            found.append(say("en", "file.changed", path=path))
    return found


def layers() -> str:
    """What keeps each student's check apart here, said once before a class is graded."""
    if sandbox.bubblewrap() is not None:
        return "grade: each check runs in a bubblewrap sandbox (no network, no file of yours)"
    return (
        "grade: no sandbox here (bubblewrap not found or not permitted): each check runs "
        "in a session of its own, ended whole; see GRADING.md for what that leaves open"
    )


def packages(into: Path) -> None:
    """Copy the packages requirements.txt names, and theirs, out of this environment.

    Hard links where the system allows (no bytes copied, no path back to where they
    came from), copies elsewhere.  Only what each distribution installed beside its
    modules is taken: its scripts and data stay where they are.
    """
    into.mkdir(parents=True)
    todo = [line for line in handout.requirements().splitlines() if line and line[0] != "#"]
    done: set[str] = set()
    while todo:
        spec = todo.pop()
        name, _, marker = spec.partition(";")
        name = re.split(r"[\s<>=!~\[(]", name.strip(), maxsplit=1)[0]
        if "extra ==" in marker or name.lower() in done:
            continue
        done.add(name.lower())
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a dependency of another system or Python: not this one's
        base = Path(str(dist.locate_file(""))).resolve()
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file))).resolve()
            if base not in source.parents or source.suffix in (".pyc",):
                continue
            target = into / source.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_file() and not target.exists():
                try:
                    os.link(source, target)
                except OSError:
                    shutil.copyfile(source, target)
        todo += dist.requires or []


def grade_one(
    exercise: Exercise, given: Path, time_limit: float, total_limit: float, teacher: Teacher
) -> Row:
    """Judge one folder with the repository's tests, within ``total_limit`` seconds.

    A tampered folder is not run: it scores 0, and the tampered column says why.  Whatever
    goes wrong while one folder is judged is that folder's row, with a sentence: no
    folder ends or stalls the grading of the others.
    """
    tasks = tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    most = sum(exercise.points(n) for n in tasks)
    zero = dict.fromkeys(tasks, 0)
    try:
        return _grade(exercise, given, time_limit, total_limit, teacher, zero, most)
    except Exception as error:  # one folder's trap is that folder's row, never the class's
        why = say("en", "problem.not-graded", error=f"{type(error).__name__}: {error}")
        return Row(str(given), zero, 0, most, [], why)


def _grade(
    exercise: Exercise,
    given: Path,
    time_limit: float,
    total_limit: float,
    teacher: Teacher,
    zero: dict[int, int],
    most: int,
) -> Row:
    folder = given.resolve()
    marker = workspace.read_marker(folder)
    if marker is None or marker["exercise"] != exercise.name:
        return Row(str(given), zero, 0, most, [], f"not a workspace of {exercise.name}")
    tampered = against_teacher(exercise, folder, teacher) + code_tampering(exercise, folder)
    if tampered:
        return Row(str(given), zero, 0, most, tampered)
    result = checking.run_check(
        exercise, folder, time_limit, total_limit, pristine=ROOT, isolated=teacher.site
    )
    points = {task.number: task.points for task in graded(exercise, result)}
    row = Row(str(given), {**zero, **points}, sum(points.values()), most, result.tampered)
    row.problem = "; ".join(result.problems)
    return row


def bodies_diff(exercise: Exercise, given: Path, teacher: Teacher, shown: str = "") -> str:
    """What the student wrote: each emptied function's body, as a diff from the handout's
    (the folder named ``shown``, by default as ``given``)."""
    folder = given.resolve()
    given = Path(shown) if shown else given
    teacher.copy(handout.is_handout(folder), "en")
    lines: list[str] = []
    for target in exercise.replace:
        file = folder / target.path
        try:
            why = studentfile.regular_file(file)
            if why is not None:  # a link's target is not what the student wrote
                raise OSError(why)
            mine = body_text(file.read_bytes().decode("utf-8"), target.qualname)
        except Exception as error:  # a trap of a file is named, never the class's end
            lines.append(f"--- {given}/{target}: cannot be read ({error})\n")
            continue
        theirs = body_text(teacher.texts[target.path], target.qualname)
        name = f"{given}/{target.path}:{target.qualname}"
        diff = difflib.unified_diff(
            theirs.splitlines(keepends=True),
            mine.splitlines(keepends=True),
            f"handout {target}",
            name,
        )
        lines += list(diff)
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return visible(text)


#: Characters a terminal obeys rather than shows (an escape that moves the cursor up and
#: erases the lines above could hide a body from the teacher), and those that break or
#: reorder a line for a reader: shown as \x1b, \u2028 and the like.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every CONTROL character written out instead of obeyed."""
    return CONTROL.sub(lambda found: ascii(found[0])[1:-1], text)


def table(exercise: Exercise, rows: list[Row]) -> str:
    """The rows as a text table: student, points per task, total, tampered files."""
    tasks = tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    header = ["student", *(f"task {n}" for n in tasks), "total", "tampered"]
    lines = [header]
    for row in rows:
        note = ", ".join(row.tampered) or "-"
        if row.problem:
            note += f" ({row.problem})"
        total = f"{row.total}/{row.most}"
        lines.append([row.folder, *(str(row.points[n]) for n in tasks), total, note])
    lines = [[visible(cell) for cell in line] for line in lines]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True))
        + "  "
        + line[-1]
        + "\n"
        for line in lines
    )


def as_csv(exercise: Exercise, rows: list[Row]) -> str:
    """The rows as CSV: the folder first, `total,max` last, a header row on top."""
    tasks = tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["folder", *(f"task {n}" for n in tasks), "tampered", "problem", "total", "max"]
    writer.writerow(header)
    for row in rows:
        points = [row.points[n] for n in tasks]
        tampered = "; ".join(row.tampered)
        writer.writerow([row.folder, *points, tampered, row.problem, row.total, row.most])
    return out.getvalue()
