"""What a stuck student is told: the hint for the task that fails, and an emptied function
that fails with its own NotImplementedError whatever is left around it.

All in-process: `hint` reads the verdicts `check` keeps in the workspace's marker, so a
test gives the marker those verdicts instead of running a check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.tools.exercises import answers, catalog, workspace
from shared.tools.exercises.bodies import empty_functions
from shared.tools.exercises.catalog import HINT_TASK, hint_task
from shared.tools.exercises.cli import main

ANSWER_LINE = 16  # characters: a statement this long, copied into a hint, gives the answer away


def shown(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What `hint` prints."""
    capsys.readouterr()
    assert main(["hint", *args]) == 0
    return capsys.readouterr().out


def test_after_task_1_passes_hint_gives_the_next_task_s_hint_first(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s2-step")
    assert exercise.hint_tasks[:2] == (1, 2), "s2-step: its first hint is task 1's alone"
    assert main(["start", "s2-step"]) == 0  # the default workspace, which `hint` reads
    folder = out / "s2-step"
    # What `check` keeps after a check where task 1 passed and tasks 2 and 3 failed.
    workspace.remember_verdicts(exercise, folder, {1: True, 2: False, 3: False})
    task_2 = [n for n, task in enumerate(exercise.hint_tasks) if task == 2]
    for number in task_2:
        said = shown(capsys, "s2-step")
        assert said.startswith(f"hint {number + 1} of {len(exercise.hints)}: Task 2:"), said
    # `check --task 2` then passes task 2 alone: task 3's hints come next.
    workspace.remember_verdicts(exercise, folder, {2: True})
    assert ": Task 3:" in shown(capsys, "s2-step")
    assert workspace.last_verdicts(exercise, folder) == {1: True, 2: True, 3: False}
    # The Chinese hints follow the same choice, and share what was shown.
    assert "：任务 3：" in shown(capsys, "s2-step", "--lang", "zh-CN")
    workspace.remember_verdicts(exercise, folder, {3: True})
    assert "no hint needed" in shown(capsys, "s2-step")


def test_before_any_check_the_hints_come_in_their_order(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s2-step")
    assert main(["start", "s2-step"]) == 0
    for number, task in enumerate(exercise.hint_tasks[:3], 1):
        said = shown(capsys, "s2-step")
        assert said.startswith(f"hint {number} of {len(exercise.hints)}: Task {task}:"), said


@pytest.mark.parametrize("exercise", catalog.all_exercises(), ids=lambda e: e.name)
def test_every_hint_names_its_task_in_each_language(exercise: catalog.Exercise) -> None:
    tasks = catalog.tasks_in((catalog.ROOT / exercise.tests).read_text(encoding="utf-8"))
    assert set(exercise.hint_tasks) <= set(tasks), f"{exercise.name}: a hint for no task"
    for lang in ("en", "zh-CN"):
        said = [hint_task(hint) for hint in exercise.hints_in(lang)]
        assert said == list(exercise.hint_tasks), (
            f"{exercise.name}: its {lang} hints do not start with the tasks of the English "
            f"ones ({HINT_TASK.pattern}): {said}"
        )


GENERATOR = '''
def fetch(url):
    """Yields."""
    reply = yield ("get", url)
    replies.append(reply)
'''


def test_what_is_left_of_an_emptied_generator_changes_nothing_under_the_student_s_code() -> None:
    emptied = empty_functions(GENERATOR, ["fetch"], {"fetch": "write fetch"})
    space: dict[str, object] = {}
    exec(compile(emptied, "<emptied>", "exec"), space)
    with pytest.raises(NotImplementedError, match="write fetch"):
        next(space["fetch"]("/"))  # type: ignore[operator]
    # The student writes the body in place of the `raise` line alone, and leaves the rest.
    stub = next(line for line in emptied.splitlines() if "raise NotImplementedError" in line)
    # Their body ends without a `return`, as a worker's loop or a callback's may.
    written = '    reply = yield ("get", url)\n    replies.append(reply)'
    space["replies"] = replies = []
    exec(compile(emptied.replace(stub, written), "<written>", "exec"), space)
    steps = space["fetch"]("/")  # type: ignore[operator]
    assert next(steps) == ("get", "/")
    with pytest.raises(StopIteration):
        extra = steps.send("ok")
        pytest.fail(f"the line left of the emptied body yielded {extra!r} after the student's")
    assert replies == ["ok"]


def code_lines(exercise: catalog.Exercise) -> set[str]:
    """The statements of the exercise's reference bodies long enough to be an answer line."""
    lines = set()
    for target in exercise.replace:
        for line in answers.reference_body(target).splitlines():
            statement = line.partition("  #")[0].strip().rstrip(":")
            if len(statement) >= ANSWER_LINE and not statement.startswith("#"):
                lines.add(statement)
    return lines


@pytest.mark.parametrize("exercise", catalog.all_exercises(), ids=lambda e: e.name)
def test_the_last_hint_of_a_task_names_the_idea_not_a_line_of_the_answer(
    exercise: catalog.Exercise,
) -> None:
    """The answer is `solve`'s: a hint may name a method, not copy a statement."""
    tasks = exercise.hint_tasks
    lines = code_lines(exercise)
    for lang in ("en", "zh-CN"):
        hints = exercise.hints_in(lang)
        for number, hint in enumerate(hints):
            if number + 1 < len(tasks) and tasks[number + 1] == tasks[number]:
                continue  # not the last of its task
            copied = [line for line in lines if line in hint]
            assert not copied, f"{exercise.name}: {lang} hint {number + 1} copies {copied}"
