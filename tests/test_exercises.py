"""The exercise tool (shared/tools/exercises/): every exercise keeps its promises.

The first test runs for each exercise found in shared/tools/exercises/, so an exercise added
later is held to the same rules without a line changed here: on a fresh workspace
`check` fails every task, and after `solve` it passes them all.  Each `check` is one
pytest subprocess, as a student's is: these two are the suite's one round of them per
exercise.  The catalogue of wrong answers, and the tasks solved one by one, are judged
in this process (tests/test_exercise_answers.py).
"""

from __future__ import annotations

import ast
import collections
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared import STAGES
from shared.tools.exercises import catalog, checking, manifest, workspace
from shared.tools.exercises.bodies import (
    KEEPS_A_GENERATOR,
    body_text,
    empty_functions,
    locate,
    put_bodies,
    yields,
)
from shared.tools.exercises.cli import main

ROOT = Path(__file__).resolve().parent.parent
TASK_LINE = re.compile(r"^task (\d+): (passed|FAILED)(?: - (.*))?$", re.MULTILINE)
LIMIT_MESSAGE = "took longer than 1 s: an endless loop, or a wait nothing ends?"


def task_lines(output: str) -> dict[int, tuple[str, str]]:
    """The verdict and reason of each task in a check's output."""
    return {int(n): (verdict, reason or "") for n, verdict, reason in TASK_LINE.findall(output)}


def exercise_names() -> list[str]:
    """Every exercise, in the order `list` gives."""
    return [exercise.name for exercise in catalog.all_exercises()]


def exercise_folders() -> list[str]:
    """The name of every folder with an exercise.toml, unread: a broken one fails its test."""
    return sorted(path.parent.name for path in catalog.EXERCISES.glob("*/exercise.toml"))


def start(name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Start a workspace of ``name`` in ``folder``, which must succeed."""
    assert main(["start", name, "--into", str(folder)]) == 0
    capsys.readouterr()
    return folder


# --- (a) every exercise: a fresh workspace fails, the reference passes --------------------


@pytest.mark.parametrize("name", exercise_folders())
def test_a_fresh_workspace_fails_every_task_and_after_solve_every_task_passes(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    exercise = catalog.find(name)
    assert exercise is not None
    tasks = catalog.tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    assert tasks, f"{exercise.tests} marks no test with @pytest.mark.task(taskno=N)"
    folder = start(name, tmp_path / name, capsys)
    for target in exercise.replace:
        text = (folder / target.path).read_text(encoding="utf-8")
        message = f"exercise {name}: write {target.qualname} (see INSTRUCTIONS.md)"
        assert f'raise NotImplementedError("{message}")' in text, f"{target} was not emptied"

    # A task's verdict is its first failure: the rest of its tests are failed unrun.
    monkeypatch.setenv("EXERCISE_FIRST_FAILURE", "1")
    assert main(["check", name, "--in", str(folder)]) == 1
    monkeypatch.delenv("EXERCISE_FIRST_FAILURE")  # the solved check runs every test
    fresh = task_lines(capsys.readouterr().out)
    assert sorted(fresh) == tasks
    assert {n: verdict for n, (verdict, _) in fresh.items()} == dict.fromkeys(tasks, "FAILED")

    assert main(["solve", name, "--in", str(folder)]) == 0
    capsys.readouterr()
    for target in exercise.replace:  # the round trip gives the repository's file back exactly
        assert (folder / target.path).read_bytes() == (ROOT / target.path).read_bytes()
    assert main(["check", name, "--in", str(folder)]) == 0
    solved = task_lines(capsys.readouterr().out)
    assert solved == dict.fromkeys(tasks, ("passed", ""))


# --- (b) the verbs --------------------------------------------------------------------------


def test_list_shows_each_exercise_in_order_with_its_stage_idea_and_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    exercises = catalog.all_exercises()
    assert exercises, "there is at least s1-loop"
    places = [text.index(f"{exercise.name} ") for exercise in exercises]
    assert places == sorted(places), "list follows each exercise.toml's order"
    flat = " ".join(text.split())
    for exercise in exercises:
        line = next(line for line in text.splitlines() if line.startswith(f"{exercise.name} "))
        assert exercise.stage in line and exercise.idea in line
        assert " ".join(exercise.summary.split()) in flat
    assert [e.order for e in exercises] == sorted(e.order for e in exercises)


def test_list_names_gives_the_names_alone_one_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--names"]) == 0
    assert capsys.readouterr().out.splitlines() == exercise_names()
    assert "s1-loop" in exercise_names()


def test_an_unknown_exercise_prints_the_list_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for verb in ("start", "check", "hint", "solve"):
        assert main([verb, "no-such-exercise"]) == 2, verb
        printed = capsys.readouterr()
        assert "no-such-exercise" in printed.err
        assert all(name in printed.out for name in exercise_names())


@pytest.mark.parametrize("verb", ["check", "solve"])
def test_check_and_solve_on_a_folder_that_is_no_workspace_say_to_start_and_exit_2(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main([verb, "s1-loop", "--in", str(tmp_path)]) == 2
    assert f"start s1-loop --into {tmp_path}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_check_on_another_exercise_s_workspace_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    workspace.write_marker(folder, {"exercise": "some-other", "hints_shown": 0})
    assert main(["check", "s1-loop", "--in", str(folder)]) == 2
    assert "workspace of some-other" in capsys.readouterr().err


def test_hints_come_one_at_a_time_and_after_the_last_all_together(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.find("s1-loop")
    assert exercise is not None and len(exercise.hints) >= 2
    total = len(exercise.hints)
    for number, hint in enumerate(exercise.hints, 1):
        assert main(["hint", "s1-loop"]) == 0
        shown = capsys.readouterr().out
        assert shown.startswith(f"hint {number} of {total}: ")
        assert hint in shown
        assert all(other not in shown for other in exercise.hints if other != hint)
    assert main(["hint", "s1-loop"]) == 0
    every = capsys.readouterr().out
    assert "no more hints" in every
    assert all(f"hint {n}: {hint}" in every for n, hint in enumerate(exercise.hints, 1))
    assert (out / ".hints.json").is_file()  # no default workspace: the count is kept here


def test_with_a_default_workspace_the_hint_count_lives_in_its_marker(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["start", "s1-loop"]) == 0  # into the default folder, here under tmp_path
    assert main(["hint", "s1-loop"]) == 0
    assert main(["hint", "s1-loop"]) == 0
    assert "hint 2 of" in capsys.readouterr().out
    marker = workspace.read_marker(out / "s1-loop")
    assert marker == {"exercise": "s1-loop", "hints_shown": 2, "lang": "en"}
    assert not (out / ".hints.json").exists()


def test_start_makes_the_workspace_described(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.find("s1-loop")
    assert exercise is not None
    folder = start("s1-loop", tmp_path / "ws", capsys)
    assert workspace.read_marker(folder) == {"exercise": "s1-loop", "hints_shown": 0, "lang": "en"}
    assert (folder / "INSTRUCTIONS.md").read_bytes() == exercise.instructions.read_bytes()
    for path in manifest.JUDGING:  # pytest's settings, the conftest files, the sentences
        assert (folder / path).read_bytes() == (ROOT / path).read_bytes()
    assert (folder / exercise.tests).is_file()
    assert not (folder / "shared" / "tools" / "exercises").exists(), (
        "the tool and its hints stay home"
    )
    for package in ["shared", *STAGES.values()]:
        for source in (ROOT / package).rglob("*.py"):
            relative = source.relative_to(ROOT)
            if relative.parts[:3] == ("shared", "tools", "exercises") or relative.as_posix() == (
                "stage1_callbacks/loop.py"
            ):
                continue
            assert (folder / relative).read_bytes() == source.read_bytes(), relative


def test_start_refuses_to_overwrite_a_workspace_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    (folder / "my-notes.txt").write_text("work in progress")
    assert main(["start", "s1-loop", "--into", str(folder)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (folder / "my-notes.txt").exists()
    assert main(["start", "s1-loop", "--into", str(folder), "--force"]) == 0
    assert not (folder / "my-notes.txt").exists()
    assert workspace.read_marker(folder) is not None


def test_start_never_touches_a_folder_that_holds_something_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    for extra in ([], ["--force"]):
        assert main(["start", "s1-loop", "--into", str(tmp_path), *extra]) == 2
        assert "not a workspace" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]


def test_solve_replaces_only_the_exercise_s_functions_and_shows_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    path = folder / "stage1_callbacks" / "loop.py"
    mine = put_bodies(path.read_text(), {"EventLoop.run_once": "        pass  # my attempt\n"})
    mine = "# my own note, which solve must keep\n" + mine
    path.write_text(mine)
    assert main(["solve", "s1-loop", "--in", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert "--- a/stage1_callbacks/loop.py" in shown and "+++ b/stage1_callbacks/loop.py" in shown
    assert "-        pass  # my attempt" in shown
    assert "+        for key, mask in self.selector.select(timeout):" in shown
    solved = path.read_text()
    assert (
        solved
        == "# my own note, which solve must keep\n" + (ROOT / path.relative_to(folder)).read_text()
    )
    assert (folder / workspace.BACKUP / "stage1_callbacks" / "loop.py").read_text() == mine
    assert main(["solve", "s1-loop", "--in", str(folder)]) == 0
    assert "nothing changed" in capsys.readouterr().out


ENDLESS = {
    "busy": "        while True:\n            pass\n",
    # select() with no timeout: it spins on ready sockets, and blocks forever on none
    "select": "        while True:\n            self.selector.select(None)\n",
}


@pytest.mark.parametrize("kind", ENDLESS)
def test_an_endless_loop_is_a_failed_task_that_says_it_ran_out_of_time(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    path = folder / "stage1_callbacks" / "loop.py"
    path.write_text(put_bodies(path.read_text(), {"EventLoop.run_once": ENDLESS[kind]}))
    started = time.monotonic()
    assert main(["check", "s1-loop", "--in", str(folder), "--time-limit", "1"]) == 1
    took = time.monotonic() - started
    verdicts = task_lines(capsys.readouterr().out)
    assert sorted(verdicts) == [1, 2, 3]
    assert all(verdict == "FAILED" for verdict, _ in verdicts.values())
    assert all(reason.startswith(LIMIT_MESSAGE) for _, reason in verdicts.values())
    # One test per task runs out of time; the task's other tests are failed without waiting.
    assert took < 30, f"the check took {took:.1f} s"


def test_the_whole_check_has_a_limit_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = start("s1-loop", tmp_path / "ws", capsys)
    path = folder / "stage1_callbacks" / "loop.py"
    path.write_text(put_bodies(path.read_text(), {"EventLoop.run_once": ENDLESS["busy"]}))
    started = time.monotonic()
    argv = ["check", "s1-loop", "--in", str(folder), "--time-limit", "60", "--total-limit", "3"]
    assert main(argv) == 1
    # Without the total limit the first task alone would run to its 60 s: only that is
    # told from the 3 s limit, with room for a loaded laptop.
    assert time.monotonic() - started < 50
    verdicts = task_lines(capsys.readouterr().out)
    assert sorted(verdicts) == [1, 2, 3]
    assert all(v == "FAILED" for v, _ in verdicts.values())
    assert "stopped after" in verdicts[3][1]


def test_the_tests_refuse_code_that_is_not_the_workspace_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin stops a run whose crawler modules come from anywhere but the workspace."""
    folder = start("s1-loop", tmp_path / "ws", capsys)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(folder), EXERCISE_WORKSPACE=str(elsewhere))
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/exercises"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"not imported from the workspace {elsewhere}" in ran.stderr
    assert "stage1_callbacks.loop" in ran.stderr


def test_check_judges_the_recorded_proof_and_the_task_marks(tmp_path: Path) -> None:
    exercise = catalog.find("s1-loop")
    assert exercise is not None
    test = {"id": "t.py::test_a", "task": 1}
    ran = [
        {"event": "report", "id": test["id"], "task": 1, "when": when, "outcome": "passed"}
        for when in ("setup", "call", "teardown")
    ]
    here = {"stage1_callbacks.loop": str(tmp_path / "stage1_callbacks" / "loop.py")}
    there = {"stage1_callbacks.loop": "/somewhere/else/stage1_callbacks/loop.py"}

    def verdict(records: list[dict[str, object]]) -> checking.CheckResult:
        return checking.judge(records, [1], exercise, tmp_path, stopped=None)

    collected = {"event": "collected", "tests": [test]}
    assert verdict([collected, {"event": "modules", "files": here}, *ran]).passed
    strayed = verdict([collected, {"event": "modules", "files": there}, *ran])
    assert not strayed.passed and "not from the workspace" in strayed.problems[0]
    never = verdict([collected, {"event": "modules", "files": {}}, *ran])
    assert not never.passed and "never imported stage1_callbacks.loop" in never.problems[0]
    unmarked = {"event": "collected", "tests": [test, {"id": "t.py::test_b", "task": None}]}
    loose = verdict([unmarked, {"event": "modules", "files": here}, *ran])
    assert not loose.passed and "t.py::test_b" in loose.problems[0]
    cut = checking.judge([collected], [1], exercise, tmp_path, stopped="stopped after 9 s")
    assert cut.tasks[0].line() == "task 1: FAILED - not run: stopped after 9 s"


# --- the ast machinery ------------------------------------------------------------------------

SAMPLE = '''\
import functools

pytestmark = pytest.mark.usefixtures("english_tool")  # the tool's sentences, in English


def plain(a,
          b=1):  # a signature on two lines
    # a comment above the first statement goes with the body
    return a + b


class Thing:
    """A class."""

    @functools.cache
    def method(self) -> int:
        """A docstring that stays."""
        total = 0
        for n in range(3):
            total += n
        return total
        # a comment of the body

    def gen(self):
        """Yields."""
        yield from range(3)

    async def coro(self):
        """Awaits."""
        return 1

    def __repr__(self):
        return "Thing()"
'''


def test_emptying_keeps_decorators_signature_docstring_and_every_other_byte() -> None:
    names = ["plain", "Thing.method", "Thing.gen", "Thing.coro"]
    emptied = empty_functions(SAMPLE, names, {n: f"write {n}" for n in names})
    assert emptied == SAMPLE.replace(
        "    # a comment above the first statement goes with the body\n    return a + b\n",
        '    raise NotImplementedError("write plain")\n',
    ).replace(
        "        total = 0\n        for n in range(3):\n            total += n\n"
        "        return total\n        # a comment of the body\n",
        '        raise NotImplementedError("write Thing.method")\n',
    ).replace(
        "        yield from range(3)\n",
        f'        raise NotImplementedError("write Thing.gen")\n        {KEEPS_A_GENERATOR}\n',
    ).replace(
        "        return 1\n",
        '        raise NotImplementedError("write Thing.coro")\n',
    )
    tree = ast.parse(emptied)
    thing = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    kinds = {n.name: (type(n).__name__, yields(n)) for n in thing.body if hasattr(n, "args")}
    assert kinds["gen"] == ("FunctionDef", True)  # still a generator
    assert kinds["coro"] == ("AsyncFunctionDef", False)  # still a coroutine function
    # and the reference bodies put back give the file back
    assert put_bodies(emptied, {name: body_text(SAMPLE, name) for name in names}) == SAMPLE


def test_a_missing_ambiguous_or_one_line_function_is_refused() -> None:
    from shared.tools.exercises.bodies import BodyError

    for name, words in [
        ("Thing.nothing", "no function or method Thing.nothing"),
        ("Other.method", "no class Other"),
    ]:
        with pytest.raises(BodyError, match=words):
            locate(SAMPLE, name)
    with pytest.raises(BodyError, match="defined 2 times"):
        locate(SAMPLE + "\n\ndef plain():\n    pass\n", "plain")
    with pytest.raises(BodyError, match="lines of its own"):
        locate("def short(): return 1\n", "short")


def test_every_function_of_the_code_can_be_emptied_and_put_back() -> None:
    """The machinery holds on all the code an exercise could name, not only on samples."""
    checked = 0
    for package in ["shared", *STAGES.values()]:
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
            names = [
                n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
                names += [
                    f"{cls.name}.{n.name}"
                    for n in cls.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            counts = collections.Counter(names)
            unique = [name for name in names if counts[name] == 1]
            emptied = empty_functions(text, unique, dict.fromkeys(unique, "x"))
            compile(emptied, str(path), "exec")
            reference = {name: body_text(text, name) for name in unique}
            assert put_bodies(emptied, reference) == text, path
            checked += len(unique)
    assert checked > 200
