"""`grade NAME DIR [DIR ...]`: re-grade a class with the repository's own tests.

Each folder (a student's workspace or clone of a handout) is judged as `check` judges
it, with the judging files taken from the repository whatever the folder holds, and
with a time limit of its own: a student whose code loops forever is stopped, failed,
and the next student's turn comes.  The points are those the repository's tests give;
the tampered column names what the student changed among the files that judge, which
gained them nothing but is worth a word.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from shared.tools.exercises import checking, handout, manifest, workspace
from shared.tools.exercises.catalog import ROOT, Exercise, tasks_in
from shared.tools.exercises.reports import graded


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
    return missing or manifest.tampered(folder, expected, manifest.WATCHED)


def grade_one(exercise: Exercise, given: Path, time_limit: float, total_limit: float) -> Row:
    """Judge one folder with the repository's tests, within ``total_limit`` seconds."""
    tasks = tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    most = sum(exercise.points(n) for n in tasks)
    folder = given.resolve()
    zero = dict.fromkeys(tasks, 0)
    marker = workspace.read_marker(folder)
    if marker is None or marker["exercise"] != exercise.name:
        return Row(str(given), zero, 0, most, [], f"not a workspace of {exercise.name}")
    result = checking.run_check(
        exercise, folder, time_limit, total_limit, pristine=ROOT, only_task=None
    )
    points = {task.number: task.points for task in graded(exercise, result)}
    row = Row(
        str(given), {**zero, **points}, sum(points.values()), most, tampering(exercise, folder)
    )
    row.problem = "; ".join(result.problems)
    return row


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
