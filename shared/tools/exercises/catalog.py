"""The exercises: each a folder of shared/tools/exercises/ with an exercise.toml and a README.md.

An exercise speaks each of LANGUAGES: its README.zh-CN.md beside README.md, and in
exercise.toml its `idea-zh-CN` and `summary-zh-CN` beside `idea` and `summary` (what
`list` prints), and its `hints-zh-CN` beside `hints`, as many and in the same order.

The format is described in shared/tools/exercises/README.md; `load` checks what the tool
relies on and says what is wrong in words an exercise's author can act on.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import STAGES
from shared.tools.language import LANGUAGES

#: The repository: shared/tools/exercises/catalog.py is three levels below it.
ROOT = Path(__file__).resolve().parents[3]
EXERCISES = ROOT / "shared" / "tools" / "exercises"
#: What an exercise's ``stage`` may be: a stage's package, the shared code, or all of them.
STAGE_CHOICES = (*STAGES.values(), "shared", "all")


class ExerciseError(ValueError):
    """An exercise.toml the tool cannot use."""


@dataclass(frozen=True)
class Target:
    """One function an exercise empties: ``path:Qualified.name``."""

    path: str  # relative to the repository, with forward slashes
    qualname: str

    @property
    def module(self) -> str:
        """The module the path imports as: stage1_callbacks/loop.py is stage1_callbacks.loop."""
        dotted = self.path.removesuffix(".py").replace("/", ".")
        return dotted.removesuffix(".__init__")

    def __str__(self) -> str:
        return f"{self.path}:{self.qualname}"


@dataclass(frozen=True)
class Exercise:
    """What exercise.toml says, and where the exercise's files are."""

    name: str
    folder: Path
    order: int
    stage: str
    idea: str
    summary: str
    chapter: str
    replace: tuple[Target, ...]
    tests: str  # the test module, relative to the repository
    hints: tuple[str, ...]
    support: tuple[str, ...]  # further files the tests need, copied as they are
    weights: tuple[tuple[int, int], ...] = ()  # (task, points) where a task is not worth 1
    #: (language, hints) for each language but English: exercise.toml's `hints-zh-CN`.
    translated_hints: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (language, idea, summary) for each language that has them: `idea-zh-CN`, `summary-zh-CN`.
    translated_lines: tuple[tuple[str, str, str], ...] = ()

    def points(self, task: int) -> int:
        """What passing the task is worth: 1, unless exercise.toml's `points` says otherwise."""
        return dict(self.weights).get(task, 1)

    @property
    def instructions(self) -> Path:
        """The README.md a student reads, which becomes the workspace's INSTRUCTIONS.md.

        Its `## Task N: title` headings name the tasks in every results format.
        """
        return self.folder / "README.md"

    def instructions_in(self, lang: str) -> Path:
        """The instructions in ``lang``: README.zh-CN.md for Chinese, README.md for English."""
        return self.instructions if lang == "en" else self.folder / f"README.{lang}.md"

    def idea_in(self, lang: str) -> str:
        """The idea in ``lang``; in English where exercise.toml has no `idea-LANG`."""
        return next((idea for code, idea, _ in self.translated_lines if code == lang), self.idea)

    def summary_in(self, lang: str) -> str:
        """The summary in ``lang``; in English where exercise.toml has no `summary-LANG`."""
        found = (summary for code, _, summary in self.translated_lines if code == lang)
        return next(found, self.summary)

    def hints_in(self, lang: str) -> tuple[str, ...]:
        """The hints in ``lang`` (none where exercise.toml has no `hints-LANG`)."""
        return self.hints if lang == "en" else dict(self.translated_hints).get(lang, ())

    @property
    def hint_tasks(self) -> tuple[int, ...]:
        """The task each hint is for, in the hints' order: what its "Task N:" says."""
        return tuple(hint_task(hint) or 0 for hint in self.hints)


#: How a hint says which task it is for: "Task 2: ..." (and in Chinese, "任务 2：...").
HINT_TASK = re.compile(r"(?:Task|任务) (\d+)[:：]")


def hint_task(hint: str) -> int | None:
    """The task a hint is for, read from its first words, or None if they name none."""
    match = HINT_TASK.match(hint)
    return int(match[1]) if match else None


def _text(data: dict[str, Any], key: str, where: Path) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ExerciseError(f"{where}: `{key}` must be a non-empty string")
    return value


def _texts(
    data: dict[str, Any], key: str, where: Path, default: list[str] | None = None
) -> list[str]:
    value = data.get(key, default)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ExerciseError(f"{where}: `{key}` must be a list of strings")
    return value


def _hints(data: dict[str, Any], where: Path) -> tuple[str, ...]:
    """The English hints, each of which starts by naming its task: `hint` picks by task."""
    hints = tuple(_texts(data, "hints", where))
    for hint in hints:
        if hint_task(hint) is None:
            raise ExerciseError(f"{where}: a hint must start with 'Task N: ': {hint[:40]!r}")
    return hints


def _weights(data: dict[str, Any], where: Path) -> tuple[tuple[int, int], ...]:
    """`points = { 2 = 3 }`: task 2 is worth 3 points (every other task, 1)."""
    table = data.get("points", {})
    if not isinstance(table, dict):
        raise ExerciseError(f"{where}: `points` must be a table such as {{ 2 = 3 }}")
    weights = []
    for task, points in table.items():
        if not task.isdigit() or type(points) is not int or points < 0:
            raise ExerciseError(f"{where}: `points`: {task} = {points!r} is not TASK = POINTS")
        weights.append((int(task), points))
    return tuple(sorted(weights))


def load(folder: Path) -> Exercise:
    """Read and check one exercise's folder."""
    where = folder / "exercise.toml"
    with where.open("rb") as file:
        data = tomllib.load(file)
    order = data.get("order")
    if not isinstance(order, int) or isinstance(order, bool):
        raise ExerciseError(f"{where}: `order` must be an integer")
    stage = _text(data, "stage", where)
    if stage not in STAGE_CHOICES:
        raise ExerciseError(f"{where}: `stage` must be one of {', '.join(STAGE_CHOICES)}")
    targets = []
    for entry in _texts(data, "replace", where):
        path, colon, qualname = entry.partition(":")
        if not colon or not path.endswith(".py") or not qualname:
            raise ExerciseError(f"{where}: {entry!r} is not 'path.py:Qualified.name'")
        if not (ROOT / path).is_file():
            raise ExerciseError(f"{where}: {path} is not a file of the repository")
        targets.append(Target(path, qualname))
    if not targets:
        raise ExerciseError(f"{where}: `replace` names no function")
    tests = _text(data, "tests", where)
    support = _texts(data, "support", where, default=[])
    for path in [tests, *support]:
        if not (ROOT / path).is_file():
            raise ExerciseError(f"{where}: {path} is not a file of the repository")
    if not (folder / "README.md").is_file():
        raise ExerciseError(f"{folder}: the exercise has no README.md")
    return Exercise(
        name=folder.name,
        folder=folder,
        order=order,
        stage=stage,
        idea=_text(data, "idea", where),
        summary=_text(data, "summary", where),
        chapter=str(data.get("chapter", "")),
        replace=tuple(targets),
        tests=tests,
        hints=_hints(data, where),
        support=tuple(support),
        weights=_weights(data, where),
        translated_hints=tuple(
            (lang, tuple(_texts(data, f"hints-{lang}", where, default=[])))
            for lang in LANGUAGES
            if lang != "en"
        ),
        translated_lines=tuple(
            (lang, _text(data, f"idea-{lang}", where), _text(data, f"summary-{lang}", where))
            for lang in LANGUAGES
            if lang != "en" and (f"idea-{lang}" in data or f"summary-{lang}" in data)
        ),
    )


def all_exercises() -> list[Exercise]:
    """Every exercise, in the chapter's order (then by name)."""
    folders = [p.parent for p in EXERCISES.glob("*/exercise.toml")]
    return sorted((load(folder) for folder in folders), key=lambda e: (e.order, e.name))


def find(name: str) -> Exercise | None:
    """The exercise of that name, or None."""
    folder = EXERCISES / name
    if name.startswith((".", "_")) or not (folder / "exercise.toml").is_file():
        return None
    return load(folder)


def named(name: str) -> Exercise:
    """The exercise of that name; LookupError if there is none (for code that knows it exists)."""
    exercise = find(name)
    if exercise is None:
        raise LookupError(f"no exercise {name!r} in {EXERCISES}")
    return exercise


def tasks_in(test_module: str) -> list[int]:
    """The task numbers the test module's `@pytest.mark.task(taskno=N)` marks name, sorted.

    Read from the module's text, without running it: the tool knows which tasks to
    report even when the tests cannot be imported at all.
    """
    found: set[int] = set()
    for node in ast.walk(ast.parse(test_module)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "task"
        ):
            continue
        # task(taskno=N), or task(N) which the plugin accepts too
        for value in [k.value for k in node.keywords if k.arg == "taskno"] + node.args[:1]:
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found.add(value.value)
    return sorted(found)


TASK_HEADING = re.compile(r"^## Task (\d+): (.+?)\s*$", re.MULTILINE)


def task_titles(instructions: str) -> dict[int, str]:
    """Each task's title, from the instructions' `## Task N: title` headings."""
    return {int(number): title for number, title in TASK_HEADING.findall(instructions)}
