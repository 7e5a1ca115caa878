"""A check's verdict in the formats graders read: `check --format FORMAT`.

Each task is one graded item, worth its points (exercise.toml's `points`, 1 by default),
won whole when every test of the task passed, and not at all otherwise.  The formats:

- json: our own, the verdict per task with its points;
- junit: JUnit XML, which CI systems show as a test report, a test case per task;
- exercism: Exercism's results.json, version 3 (a test per task, linked by `task_id`),
  with the `score` per test and `max_score` that GitHub Classroom's Python grader adds;
- gradescope: the results.json of a Gradescope autograder (`score`, `tests[]`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from shared.tools.exercises.catalog import Exercise, task_titles
from shared.tools.exercises.checking import CheckResult, TaskResult
from shared.tools.exercises.messages import again, say
from shared.tools.language import wrap_columns

FORMATS = ("text", "json", "junit", "exercism", "gradescope")


@dataclass(frozen=True)
class Graded:
    """One task as a grader sees it."""

    number: int
    title: str
    passed: bool
    points: int
    max_points: int
    message: str  # why it failed ("" when it passed)
    tests: tuple[str, ...]  # the pytest ids of its tests

    @property
    def name(self) -> str:
        """How the task is named in every format: `task 2: a Queue of tokens`."""
        return f"task {self.number}: {self.title}" if self.title else f"task {self.number}"


def graded(exercise: Exercise, result: CheckResult) -> list[Graded]:
    """Every task of the verdict with its title and points."""
    titles = task_titles(exercise.instructions.read_text(encoding="utf-8"))
    return [_graded(exercise, task, titles.get(task.number, "")) for task in result.tasks]


def _graded(exercise: Exercise, task: TaskResult, title: str) -> Graded:
    worth = exercise.points(task.number)
    message = task.line().partition(" - ")[2] if not task.passed else ""
    earned = worth if task.passed else 0
    return Graded(task.number, title, task.passed, earned, worth, message, tuple(task.ids))


def trouble(result: CheckResult, lang: str = "en") -> str:
    """What went wrong outside the tasks: tampered files first, then other problems."""
    lines = [say(lang, "check.tampered", entry=again(entry, lang)) for entry in result.tampered]
    lines += [
        say(lang, "check.problem", problem=again(problem, lang)) for problem in result.problems
    ]
    return "\n".join(lines)


def status(result: CheckResult) -> str:
    """pass, fail, or error: the tests did not run (tampered files, pytest never started)."""
    if result.passed:
        return "pass"
    return "fail" if result.ran else "error"


#: Where a reason's line continues on the next: under the words after "task N: ".
CONTINUED = " " * 4


def wrapped(line: str, columns: int | None) -> list[str]:
    """``line`` whole, in lines of at most ``columns`` columns (by display width: a Chinese
    character takes two), those after the first indented; with None, ``line`` as it is."""
    if columns is None:
        return [line]
    first, *rest = wrap_columns(line, columns - len(CONTINUED)) or [""]
    return [first, *(CONTINUED + more for more in rest)]


def as_text(
    exercise: Exercise, result: CheckResult, lang: str = "en", columns: int | None = None
) -> str:
    """The lines `check` prints, in ``lang``: a line per task, the problems, then the sums;
    with ``columns``, each wrapped to that many columns, never cut.

    The results formats below hold the English text (gradescope's `output`): a program
    reads them, and they are the same whatever the language of the screen.
    """
    said = [task.line(lang) for task in result.tasks]
    said += trouble(result, lang).splitlines()
    lines = [part for line in said for part in wrapped(line, columns)]
    tasks = graded(exercise, result)
    done = sum(task.passed for task in result.tasks)
    points, most = sum(t.points for t in tasks), sum(t.max_points for t in tasks)
    lines.append(
        say(
            lang,
            "check.score",
            name=exercise.name,
            done=done,
            tasks=len(result.tasks),
            points=points,
            most=most,
        )
    )
    return "\n".join(lines) + "\n"


def as_json(exercise: Exercise, result: CheckResult) -> dict[str, Any]:
    """Our own format: the exercise, the sums, and each task."""
    tasks = graded(exercise, result)
    return {
        "exercise": exercise.name,
        "status": status(result),
        "points": sum(t.points for t in tasks),
        "max_points": sum(t.max_points for t in tasks),
        "tasks": [
            {
                "number": t.number,
                "title": t.title,
                "status": "passed" if t.passed else "failed",
                "points": t.points,
                "max_points": t.max_points,
                "message": t.message,
            }
            for t in tasks
        ],
        "tampered": list(result.tampered),
        "problems": list(result.problems),
    }


def as_junit(exercise: Exercise, result: CheckResult) -> str:
    """JUnit XML: a test suite for the exercise, a test case per task."""
    tasks = graded(exercise, result)
    failures = sum(not t.passed for t in tasks) if result.ran else 0
    errors = 0 if result.ran else len(tasks)
    suites = ET.Element("testsuites", name=exercise.name)
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=exercise.name,
        tests=str(len(tasks)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in [
        ("points", sum(t.points for t in tasks)),
        ("max_points", sum(t.max_points for t in tasks)),
    ]:
        ET.SubElement(properties, "property", name=key, value=str(value))
    for entry in result.tampered:
        ET.SubElement(properties, "property", name="tampered", value=entry)
    for t in tasks:
        case = ET.SubElement(suite, "testcase", classname=exercise.name, name=t.name)
        if not t.passed:
            kind = "failure" if result.ran else "error"
            detail = ET.SubElement(case, kind, message=t.message)
            detail.text = "\n".join(filter(None, [t.message, trouble(result)]))
        if t.tests:
            ET.SubElement(case, "system-out").text = "\n".join(t.tests)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def as_exercism(exercise: Exercise, result: CheckResult) -> dict[str, Any]:
    """Exercism's results.json, version 3, as GitHub Classroom's Python grader writes it."""
    tasks = graded(exercise, result)
    test_status = "fail" if result.ran else "error"
    report: dict[str, Any] = {"version": 3, "status": status(result)}
    if report["status"] == "error":
        report["message"] = trouble(result) or "the tests did not run"
    report["tests"] = [
        {
            "name": t.name,
            "status": "pass" if t.passed else test_status,
            "message": None if t.passed else t.message,
            "test_code": "\n".join(t.tests),
            "task_id": t.number,
            "score": t.points,
        }
        for t in tasks
    ]
    report["max_score"] = sum(t.max_points for t in tasks)
    return report


def as_gradescope(exercise: Exercise, result: CheckResult) -> dict[str, Any]:
    """A Gradescope autograder's results.json: the score, and a graded item per task."""
    tasks = graded(exercise, result)
    return {
        "score": sum(t.points for t in tasks),
        "max_score": sum(t.max_points for t in tasks),
        "output": as_text(exercise, result),
        "tests": [
            {
                "name": t.name,
                "number": str(t.number),
                "score": t.points,
                "max_score": t.max_points,
                "status": "passed" if t.passed else "failed",
                "output": t.message or "passed",
            }
            for t in tasks
        ],
    }


def render(
    form: str, exercise: Exercise, result: CheckResult, lang: str = "en", columns: int | None = None
) -> str:
    """The verdict in one of FORMATS: the text in ``lang`` (wrapped to ``columns``, if given),
    every other format in English."""
    if form == "text":
        return as_text(exercise, result, lang, columns)
    if form == "junit":
        return as_junit(exercise, result)
    makers = {"json": as_json, "exercism": as_exercism, "gradescope": as_gradescope}
    return json.dumps(makers[form](exercise, result), indent=2) + "\n"
