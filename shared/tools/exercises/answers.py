"""What the teachers' folder knows of each exercise: its tasks' code, and the wrong answers.

Each exercise has a file ``teachers/exercises/NAME.toml`` beside this module (the format
is in shared/tools/exercises/README.md).  It says which functions each task writes, how a
function reads while only the earlier tasks are done (so `solve --task N` can put in
task N alone), and the wrong answers students write, each a small edit of the reference
naming the words the check must say to it.  Every edit is made on the repository's own
code: there is no second copy of a solution to drift, and an edit whose text the
reference no longer has is refused by name.

``python -m shared.tools.exercises.answers`` writes the instructors' guide,
teachers/EXERCISES.md, from these files; the suite holds the guide to them.
"""

from __future__ import annotations

import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.tools.exercises.bodies import BodyError, body_text
from shared.tools.exercises.catalog import ROOT, Exercise, ExerciseError, Target, all_exercises

TEACHERS = Path(__file__).resolve().parent / "teachers"
FILES = TEACHERS / "exercises"
GUIDE = TEACHERS / "EXERCISES.md"
REGENERATE = "python3 -m shared.tools.exercises.answers"


@dataclass(frozen=True)
class Edit:
    """In the function ``target``, the text ``old`` (found exactly once) becomes ``new``."""

    target: Target
    old: str
    new: str

    def apply(self, body: str) -> str:
        """The body with the edit made; ExerciseError if ``old`` is not there exactly once."""
        found = body.count(self.old)
        if found != 1:
            raise ExerciseError(
                f"{self.target}: the text to replace occurs {found} times, not once: "
                f"{self.old.strip()[:60]!r}"
            )
        return body.replace(self.old, self.new)


@dataclass(frozen=True)
class Step:
    """Until ``task`` is done, ``edit`` holds: the function lacks that task's part."""

    task: int
    edit: Edit


@dataclass(frozen=True)
class Mistake:
    """A wrong answer to one task, and the words the check must say to it."""

    name: str
    task: int
    thinking: str  # what the student half-understood, for the instructors' guide
    edit: Edit
    says: str  # words the check's reason for the task must contain


@dataclass(frozen=True)
class Answers:
    """An exercise's tasks (the functions each writes), their steps, and the wrong answers."""

    exercise: Exercise
    tasks: dict[int, tuple[Target, ...]]
    steps: tuple[Step, ...]
    mistakes: tuple[Mistake, ...]

    def bodies(self, task: int | None = None) -> dict[Target, str]:
        """The reference bodies `solve` puts in: all of them, or task ``task``'s as it leaves them.

        A function that several tasks write reads, as task N leaves it, as the reference
        with the steps of the tasks after N still undone.
        """
        targets = self.exercise.replace if task is None else self.tasks[task]
        bodies = {}
        for target in targets:
            body = reference_body(target)
            if task is not None:
                later = [s for s in self.steps if s.task > task and s.edit.target == target]
                for step in sorted(later, key=lambda s: -s.task):  # the last task's cut first
                    body = step.edit.apply(body)
            bodies[target] = body
        return bodies

    def wrong_body(self, mistake: Mistake) -> str:
        """The body of the mistaken function: the reference with the mistake made."""
        return mistake.edit.apply(reference_body(mistake.edit.target))


def reference_body(target: Target) -> str:
    """The body of the function in the repository's current file."""
    return body_text((ROOT / target.path).read_text(encoding="utf-8"), target.qualname)


def _target(exercise: Exercise, text: object, where: Path) -> Target:
    """One of the exercise's targets, named "path:Qualified.name"."""
    for target in exercise.replace:
        if str(target) == text:
            return target
    raise ExerciseError(f"{where}: {text!r} is not a function the exercise empties")


def _edit(exercise: Exercise, entry: dict[str, Any], where: Path) -> Edit:
    old, new = entry.get("old"), entry.get("new")
    if not isinstance(old, str) or not old or not isinstance(new, str):
        raise ExerciseError(f"{where}: an edit needs `old` (not empty) and `new` texts")
    return Edit(_target(exercise, entry.get("in"), where), old, new)


def _task(entry: dict[str, Any], tasks: dict[int, Any], where: Path) -> int:
    number = entry.get("task")
    if not isinstance(number, int) or number not in tasks:
        raise ExerciseError(f"{where}: `task = {number!r}` is not one of the tasks {list(tasks)}")
    return number


def _words(entry: dict[str, Any], key: str, where: Path) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ExerciseError(f"{where}: {entry.get('name', 'an entry')}: `{key}` must be text")
    return " ".join(value.split())


def load(exercise: Exercise) -> Answers:
    """Read and check the exercise's file in teachers/exercises/."""
    where = FILES / f"{exercise.name}.toml"
    if not where.is_file():
        raise ExerciseError(f"{exercise.name} has no {where.relative_to(ROOT)}")
    with where.open("rb") as file:
        data = tomllib.load(file)
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, dict) or not raw_tasks:
        raise ExerciseError(f"{where}: `[tasks]` must map each task number to its functions")
    tasks = {
        int(number): tuple(_target(exercise, text, where) for text in targets)
        for number, targets in raw_tasks.items()
    }
    steps = tuple(
        Step(_task(entry, tasks, where), _edit(exercise, entry, where))
        for entry in data.get("until", [])
    )
    mistakes = []
    for entry in data.get("mistake", []):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ExerciseError(f"{where}: a mistake without a `name`")
        mistakes.append(
            Mistake(
                name=name,
                task=_task(entry, tasks, where),
                thinking=_words(entry, "thinking", where),
                edit=_edit(exercise, entry, where),
                says=_words(entry, "says", where),
            )
        )
    return Answers(exercise, dict(sorted(tasks.items())), steps, tuple(mistakes))


def task_titles(exercise: Exercise) -> dict[int, str]:
    """The title of each task, from the exercise's README (`## Task N: title`)."""
    titles = {}
    for line in exercise.instructions.read_text(encoding="utf-8").splitlines():
        number, colon, title = line.removeprefix("## Task ").partition(":")
        if line.startswith("## Task ") and colon and number.strip().isdigit():
            titles[int(number)] = title.strip()
    return titles


def _code(text: str) -> list[str]:
    """A fenced block of code, dedented, or a note that the student wrote nothing.

    The fence names no language: the snippets are fragments, not modules, and ruff
    formats the Python blocks of Markdown files (`allow_redirects=False` would change).
    """
    body = (
        textwrap.dedent(text.strip("\n")) if text.strip() else "# (nothing: the lines are left out)"
    )
    return ["```", body, "```"]


def guide() -> str:
    """The instructors' guide: for each exercise, its wrong answers and what the check says."""
    lines = [
        "# The exercises: the wrong answers students write, and what `check` says to them",
        "",
        *textwrap.wrap(
            f"Made by `{REGENERATE}` from the files in teachers/exercises/ (edit those, "
            "not this page). Each wrong answer is a small edit of the reference solution; "
            "the suite (tests/test_exercise_answers.py) makes every one in a fresh solved "
            "workspace and sees `check` fail its task with the words quoted here.",
            88,
        ),
        "",
    ]
    for exercise in all_exercises():
        answers = load(exercise)
        titles = task_titles(exercise)
        lines += [f"## {exercise.name}: {exercise.idea}", ""]
        for mistake in answers.mistakes:
            edit = mistake.edit
            title = titles.get(mistake.task, "")
            lines += [
                f"### {mistake.name} (task {mistake.task}: {title})",
                "",
                *textwrap.wrap(mistake.thinking, 88),
                "",
                f"In `{edit.target}`, where the reference has",
                "",
                *_code(edit.old),
                "",
                "the student writes",
                "",
                *_code(edit.new),
                "",
                f"`check` says: `task {mistake.task}: FAILED - ...{mistake.says}...`",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    """Write teachers/EXERCISES.md from the files in teachers/exercises/."""
    try:
        text = guide()
    except (ExerciseError, BodyError) as error:
        print(error, file=sys.stderr)
        return 2
    GUIDE.write_text(text, encoding="utf-8")
    print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
