"""The exercises judge the answers students really write, task by task, in sentences.

For every exercise (each has a file in shared/tools/exercises/teachers/exercises/):
- every wrong answer of its catalogue, made in a solved workspace, fails the check of
  its task with the words the catalogue names, and `check --lang zh-CN` says that reason
  in Chinese, with no English sentence outside the code it quotes;
- `solve --task N`, for N = 1, 2, ..., gives a workspace that passes exactly tasks 1..N:
  no task's tests need a later task's code;
- every assert of its tests carries a message, so no failure reads as a bare comparison;
and the instructors' guide is the one its command makes from the catalogue.

The first two run `check` as a student does, in one workspace per exercise, with one
difference: its pytest runs in this process (`pytest_in_process`) instead of a
subprocess, which saves the start of a Python and the imports of every check.  The
subprocess itself, and the limit of a whole check that only a kill from outside can
enforce, are proven once per exercise in tests/test_exercises.py.  And they ask no more
of a check than they need: a wrong answer's check runs its task's tests alone, and every
check stops a task at its first failed test (two knobs of tests/exercises/conftest.py,
set in the environment the check passes on).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from shared.tools.exercises import answers, catalog, checking
from shared.tools.exercises.bodies import put_bodies
from shared.tools.exercises.cli import main
from shared.tools.exercises.inprocess import pytest_in_process

ROOT = Path(__file__).resolve().parent.parent
TASK_LINE = re.compile(r"^task (\d+): (passed|FAILED)(?: - (.*))?$", re.MULTILINE)
#: What a task's line adds after its reason when the task has several tests.
TESTS_FAILED = re.compile(r" \(\d+ of \d+ tests failed\)$")
#: What a Chinese sentence may quote in English: code in backticks or quotes, a URL.
QUOTED = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|https?://\S+")
WORD = re.compile(r"[A-Za-z]+[,;:.?!]?")  # an English word, not a name from the code
# Seconds a test may take: the tool's default.  No wrong answer here should need the limit,
# but s1-read's reads-until-it-would-block keeps its test 8 s (the flood the test pours),
# and a busy machine adds more: with 10 s, the limit came first.
TIME_LIMIT = "20"


def exercise_names() -> list[str]:
    """Every exercise, in the chapter's order."""
    return [exercise.name for exercise in catalog.all_exercises()]


def english_in(text: str) -> list[str]:
    """The English phrases (three words or more in a row) of ``text``, outside what it quotes.

    A name from the code (self.sock, q.get(), max_tasks = 3, --max-per-host) is no word.
    """
    phrases, run = [], []
    for token in [*QUOTED.sub(" ", text).split(), ""]:
        if WORD.fullmatch(token):
            run.append(token)
            continue
        if len(run) >= 3:
            phrases.append(" ".join(run))
        run = []
    return phrases


def verdicts(output: str) -> dict[int, tuple[str, str]]:
    """The verdict and reason of each task in a check's output."""
    return {int(n): (verdict, reason or "") for n, verdict, reason in TASK_LINE.findall(output)}


Verdicts = dict[int, tuple[str, str]]


def check(name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> Verdicts:
    """Run `check` on the workspace; its verdict per task."""
    capsys.readouterr()
    main(["check", name, "--in", str(folder), "--time-limit", TIME_LIMIT])
    output = capsys.readouterr().out
    found = verdicts(output)
    assert found, f"check printed no task line:\n{output}"
    return found


def start(name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A fresh workspace of the exercise."""
    assert main(["start", name, "--into", str(folder)]) == 0, f"start {name} failed"
    capsys.readouterr()
    return folder


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks made in this test run pytest in this process, and stop each task at its first
    failed test."""
    monkeypatch.setattr(checking, "_run", pytest_in_process)
    monkeypatch.setenv("EXERCISE_FIRST_FAILURE", "1")


@pytest.mark.slow
@pytest.mark.timeout(600)  # some forty answers, each a check of its own: not the usual 120 s
@pytest.mark.usefixtures("in_process")
@pytest.mark.parametrize("name", exercise_names())
def test_every_wrong_answer_fails_its_task_with_the_words_that_name_it(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    exercise = catalog.find(name)
    assert exercise is not None, name
    known = answers.load(exercise)
    assert len(known.mistakes) >= 2, f"{name}: the catalogue has fewer than two wrong answers"
    folder = start(name, tmp_path / name, capsys)
    assert main(["solve", name, "--in", str(folder)]) == 0, f"solve {name} failed"
    wrong: list[str] = []
    for mistake in known.mistakes:
        path = folder / mistake.edit.target.path
        solved = path.read_text(encoding="utf-8")
        body = known.wrong_body(mistake)
        path.write_text(put_bodies(solved, {mistake.edit.target.qualname: body}), "utf-8")
        monkeypatch.setenv("EXERCISE_TASKS", str(mistake.task))  # its task's tests alone
        try:
            verdict, reason = check(name, folder, capsys).get(mistake.task, ("missing", ""))
        finally:
            path.write_text(solved, encoding="utf-8")
        if verdict != "FAILED" or mistake.says not in reason:
            wrong.append(f"{mistake.name}: task {mistake.task} {verdict} - {reason!r}")
        said = checking.TaskResult(mistake.task, False, [TESTS_FAILED.sub("", reason)])
        if english := english_in(said.line("zh-CN")):
            wrong.append(f"{mistake.name}: English under zh-CN {english}: {said.line('zh-CN')}")
    assert not wrong, f"{name}: wrong answers the check does not name (in both languages):\n" + (
        "\n".join(wrong)
    )


@pytest.mark.slow
@pytest.mark.usefixtures("in_process")
@pytest.mark.parametrize("name", exercise_names())
def test_solving_tasks_one_by_one_passes_exactly_the_tasks_solved(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.find(name)
    assert exercise is not None, name
    tasks = catalog.tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    known = answers.load(exercise)
    assert list(known.tasks) == tasks, f"{name}: [tasks] names {list(known.tasks)}, not {tasks}"
    folder = start(name, tmp_path / name, capsys)
    for solved in tasks:
        assert main(["solve", name, "--in", str(folder), "--task", str(solved)]) == 0
        if solved == tasks[-1]:
            break  # all solved: the files are the repository's (below), which pass every task
        found = check(name, folder, capsys)
        passed = [n for n, (verdict, _) in found.items() if verdict == "passed"]
        expected = [n for n in tasks if n <= solved]
        assert passed == expected, (
            f"{name}: with tasks 1..{solved} solved, tasks {passed} passed, not {expected}: {found}"
        )
    # Task by task, the whole reference is in at the end: the same files as `solve` without
    # --task gives, which pass every task (tests/test_exercises.py checks that).
    for target in exercise.replace:
        assert (folder / target.path).read_bytes() == (ROOT / target.path).read_bytes(), (
            f"{name}: after every task's solve, {target.path} is not the repository's"
        )


def test_solve_refuses_a_task_the_exercise_has_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    assert main(["solve", "s1-loop", "--in", str(folder), "--task", "9"]) == 2
    assert "s1-loop has no task 9" in capsys.readouterr().err


def test_no_two_wrong_answers_of_a_catalogue_are_the_same_code() -> None:
    """A wrong answer earns its place by a mistake no other one makes: two whose edited
    functions parse alike (comments and layout aside) cost a check and catch nothing more."""
    same = []
    for exercise in catalog.all_exercises():
        known = answers.load(exercise)
        seen: dict[tuple[str, str], str] = {}
        for mistake in known.mistakes:
            code = textwrap.dedent(known.wrong_body(mistake))
            try:
                shape = ast.dump(ast.parse(code))
            except SyntaxError:
                shape = code
            key = (str(mistake.edit.target), shape)
            if key in seen:
                same.append(f"{exercise.name}: {mistake.name} is {seen[key]}")
            seen.setdefault(key, mistake.name)
    assert not same, same


def test_each_catalogue_names_every_task_and_edits_the_reference_it_has() -> None:
    """Loading every file makes every edit: text the reference lost is refused by name."""
    total = 0
    for exercise in catalog.all_exercises():
        known = answers.load(exercise)
        tasks = catalog.tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
        assert list(known.tasks) == tasks, f"{exercise.name}: [tasks] is not {tasks}"
        written = {target for targets in known.tasks.values() for target in targets}
        assert written == set(exercise.replace), f"{exercise.name}: a function no task writes"
        for task in tasks:
            known.bodies(task)  # raises if a step's text is not in the reference
        for mistake in known.mistakes:
            assert known.wrong_body(mistake) != answers.reference_body(mistake.edit.target)
        total += len(known.mistakes)
    assert total >= 32, f"the catalogue has {total} wrong answers, fewer than 32"


def test_the_instructors_guide_is_the_one_its_command_makes() -> None:
    assert answers.GUIDE.read_text(encoding="utf-8") == answers.guide(), (
        f"teachers/EXERCISES.md is stale: run `{answers.REGENERATE}`"
    )


def test_every_assert_of_the_exercises_tests_says_what_went_wrong() -> None:
    """A failed assert without a message reads `assert None == 42`: no sentence for a student.
    And the sentence is a reason(...) of tests/exercises/reasons.toml, in every language."""
    bare = []
    for path in sorted((ROOT / "tests" / "exercises").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            said = node.msg if isinstance(node, ast.Assert) else None
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("pytest.fail", "raises"):
                said = node.args[-1] if node.args and path.name != "conftest.py" else None
                said = None if isinstance(said, ast.Name) else said  # a reason passed on
            if isinstance(node, ast.Assert) and said is None:
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif said is not None and not (
                isinstance(said, ast.Call) and ast.unparse(said.func) == "reason"
            ):
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno} (not a reason(...))")
    assert not bare, "asserts without a sentence of the table:\n" + "\n".join(bare)


@pytest.mark.usefixtures("in_process")
def test_the_check_names_an_empty_function_even_where_the_crawler_swallows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """per-host's empty host_slot raises inside work(), whose handler records it as a bug."""
    folder = start("per-host", tmp_path / "ws", capsys)
    found = check("per-host", folder, capsys)
    for task, (verdict, reason) in found.items():
        assert verdict == "FAILED", f"task {task} of a fresh workspace passed"
        assert "NotImplementedError" in reason and "host_slot" in reason, (
            f"task {task} does not say the function is still empty: {reason!r}"
        )
