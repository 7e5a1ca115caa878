"""Grading a class (shared/tools/exercises/): the verdict comes from the repository's tests.

- A workspace whose tests were changed, removed or added to is reported by file, scores
  nothing and exits 2, for every exercise; a student who also rewrites the manifest
  still gains nothing, because the repository's own tests judge.
- The results formats hold the fields their graders document.
- A handout is a ready repository.  Every exercise's workflow has a grading step per
  task, worth the task's points; one handout's workflow, run step by step in its order
  in the virtualenv these tests run in, gives 0 points unsolved and every point after
  `solve`.  (That the packages its requirements.txt names install into a fresh
  virtualenv is .ci/class.py's to prove: they are the class environment's, from the same
  pyproject.toml.)
- `grade` re-grades several folders, one of them looping forever, in bounded time.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from shared.tools.exercises import catalog, checking, handout, manifest, reports, workspace
from shared.tools.exercises.bodies import put_bodies
from shared.tools.exercises.cli import main
from shared.tools.language import LANGUAGES

pytestmark = pytest.mark.usefixtures("english_tool")  # the tool's sentences, in English

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(path.parent.name for path in catalog.EXERCISES.glob("*/exercise.toml"))
GRADER = "classroom-resources/autograding-command-grader@"
REPORTER = "classroom-resources/autograding-grading-reporter@"
#: A test module any code passes: what a student might put in place of the real one.
HOLLOW = "import pytest\n\n\n" + "".join(
    f"@pytest.mark.task(taskno={n})\ndef test_{n}() -> None:\n    pass\n\n\n" for n in (1, 2, 3, 4)
)


def tasks_of(exercise: catalog.Exercise) -> list[int]:
    """The exercise's task numbers, as its test module marks them."""
    return catalog.tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))


def full_marks(exercise: catalog.Exercise) -> int:
    """What every task passed is worth."""
    return sum(exercise.points(n) for n in tasks_of(exercise))


def quiet(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the tool in this process; its exit status and what it printed."""
    status = main(argv)
    return status, capsys.readouterr().out


# --- item 1: the tests that judge are the repository's -----------------------------------


def tamper(kind: str, folder: Path, exercise: catalog.Exercise) -> str:
    """Do one thing a student should not to the workspace; return the path it concerns."""
    if kind == "edited":
        (folder / exercise.tests).write_text(HOLLOW, encoding="utf-8")
        return exercise.tests
    if kind == "deleted":
        (folder / "tests" / "conftest.py").unlink()
        return "tests/conftest.py"
    (folder / "tests" / "exercises" / "test_mine.py").write_text(HOLLOW, encoding="utf-8")
    return "tests/exercises/test_mine.py"


@pytest.mark.parametrize("name", NAMES)
def test_an_edited_deleted_or_added_test_file_is_named_and_scores_nothing(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named(name)
    folder = tmp_path / "ws"
    assert main(["start", name, "--into", str(folder)]) == 0
    assert main(["solve", name, "--in", str(folder)]) == 0  # even a right answer scores nothing
    capsys.readouterr()
    for kind, word in [("edited", "changed"), ("deleted", "removed"), ("added", "added")]:
        path = tamper(kind, folder, exercise)
        status, out = quiet(["check", name, "--in", str(folder), "--format", "json"], capsys)
        assert status == 2, kind
        verdict = json.loads(out)
        assert f"{path} ({word})" in verdict["tampered"], kind
        assert verdict["points"] == 0 and verdict["status"] == "error"
        assert all(task["status"] == "failed" for task in verdict["tasks"])
        assert main(["start", name, "--into", str(folder), "--force"]) == 0
        assert main(["solve", name, "--in", str(folder)]) == 0
        capsys.readouterr()


def test_a_student_who_rewrites_the_manifest_too_is_still_judged_by_the_real_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's own attack: hollow tests in place of test_s2_step.py, a patched conftest."""
    exercise = catalog.named("s2-step")
    folder = tmp_path / "ws"
    assert main(["start", "s2-step", "--into", str(folder)]) == 0
    (folder / exercise.tests).write_text(HOLLOW, encoding="utf-8")
    with (folder / "tests" / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write("\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n")
    paths = [exercise.tests, "tests/conftest.py"]
    recorded = manifest.read(folder)
    assert recorded is not None
    manifest.write(folder, {**recorded, **manifest.hashes(folder, paths)})
    capsys.readouterr()
    status, out = quiet(["check", "s2-step", "--in", str(folder)], capsys)
    assert "tampered" not in out  # the manifest was fooled, and it does not matter:
    assert status == 1, out
    assert "0 of 3 tasks passed, 0 of 3 points" in out
    assert "NotImplementedError: exercise s2-step: write Task._step" in out


def test_in_a_handout_the_manifest_decides_and_without_it_nothing_is_scored(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "handout"
    assert main(["handout", "s1-loop", str(folder)]) == 0
    (folder / "tests" / "exercises" / "test_s1_loop.py").write_text(HOLLOW, encoding="utf-8")
    ran = run_tool(folder, ["check", "s1-loop"])
    assert ran.returncode == 2, ran.stdout
    assert "tampered: tests/exercises/test_s1_loop.py (changed)" in ran.stdout
    (folder / "tests" / "exercises" / "test_s1_loop.py").write_text(HOLLOW, encoding="utf-8")
    (folder / manifest.MANIFEST).unlink()
    ran = run_tool(folder, ["check", "s1-loop"])
    assert ran.returncode == 2, ran.stdout
    assert "tampered: .exercise-hashes.json (missing or unreadable)" in ran.stdout
    assert "0 of 3 points" in ran.stdout


# --- item 2: points, and the formats ---------------------------------------------------------


def weighted(tmp_path: Path) -> catalog.Exercise:
    """s1-loop with task 2 worth 3 points, read from an exercise.toml that says so."""
    folder = tmp_path / "s1-loop"
    shutil.copytree(catalog.EXERCISES / "s1-loop", folder)
    with (folder / "exercise.toml").open("a", encoding="utf-8") as toml:
        toml.write("\npoints = { 2 = 3 }\n")
    return catalog.load(folder)


def verdict(passed: dict[int, bool], tampered: list[str] | None = None) -> checking.CheckResult:
    """A check's result as run_check makes it, without running anything."""
    tasks = []
    for number, ok in passed.items():
        task = checking.TaskResult(
            number, tests=2, ids=[f"t.py::test_{number}a", f"t.py::test_{number}b"]
        )
        if not ok:
            task.fail("AssertionError: the timer ran twice")
        tasks.append(task)
    if tampered:
        return checking.not_judged(passed, tampered)
    return checking.CheckResult(tasks, [])


def test_points_come_from_exercise_toml_one_by_default(tmp_path: Path) -> None:
    exercise = weighted(tmp_path)
    assert [exercise.points(n) for n in (1, 2, 3)] == [1, 3, 1]
    report = reports.as_json(exercise, verdict({1: True, 2: True, 3: False}))
    assert (report["points"], report["max_points"]) == (4, 5)
    assert [(t["points"], t["max_points"]) for t in report["tasks"]] == [(1, 1), (3, 3), (0, 1)]
    assert "max-score: 3" in handout.workflow(exercise)
    bad = tmp_path / "bad"
    shutil.copytree(catalog.EXERCISES / "s1-loop", bad)
    with (bad / "exercise.toml").open("a", encoding="utf-8") as toml:
        toml.write('\npoints = { two = "3" }\n')
    with pytest.raises(catalog.ExerciseError, match="is not TASK = POINTS"):
        catalog.load(bad)


def test_our_json_has_per_task_number_title_status_points_max_points_message(
    tmp_path: Path,
) -> None:
    exercise = weighted(tmp_path)
    report = reports.as_json(exercise, verdict({1: True, 2: False, 3: True}))
    assert report["exercise"] == "s1-loop" and report["status"] == "fail"
    first, second, _ = report["tasks"]
    assert set(first) == {"number", "title", "status", "points", "max_points", "message"}
    assert first == {
        "number": 1,
        "title": "run the callbacks of ready sockets",
        "status": "passed",
        "points": 1,
        "max_points": 1,
        "message": "",
    }
    assert second["status"] == "failed" and second["points"] == 0 and second["max_points"] == 3
    assert second["message"].startswith("AssertionError: the timer ran twice")


def test_junit_xml_has_a_test_case_per_task_and_its_failure(tmp_path: Path) -> None:
    exercise = weighted(tmp_path)
    tree = ET.fromstring(reports.as_junit(exercise, verdict({1: True, 2: False, 3: True})))
    suite = tree.find("testsuite")
    assert tree.tag == "testsuites" and suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "0")
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == [
        "task 1: run the callbacks of ready sockets",
        "task 2: run the timers that are due, skipping cancelled ones",
        "task 3: sleep no longer than the next timer; raise when there is nothing to wait for",
    ]
    assert all(case.get("classname") == "s1-loop" for case in cases)
    failure = cases[1].find("failure")
    assert failure is not None and "the timer ran twice" in (failure.get("message") or "")
    assert cases[0].find("failure") is None and cases[2].find("failure") is None
    points = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert points == {"points": "2", "max_points": "5"}
    untouched = ET.fromstring(reports.as_junit(exercise, verdict({1: True}, ["x.py (changed)"])))
    suite = untouched.find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    assert [p.get("value") for p in suite.iter("property") if p.get("name") == "tampered"] == [
        "x.py (changed)"
    ]


def test_exercism_results_are_version_3_with_a_task_id_per_test(tmp_path: Path) -> None:
    """The fields of Exercism's test runner interface, and Classroom's score and max_score."""
    exercise = weighted(tmp_path)
    report = reports.as_exercism(exercise, verdict({1: True, 2: False, 3: True}))
    assert report["version"] == 3 and report["status"] == "fail"
    assert "message" not in report  # required only with status error
    assert report["max_score"] == 5
    for test, number in zip(report["tests"], [1, 2, 3], strict=True):
        assert {"name", "status", "test_code", "task_id"} <= set(test)
        assert test["task_id"] == number and isinstance(test["task_id"], int)
        assert test["test_code"] == f"t.py::test_{number}a\nt.py::test_{number}b"
    assert [t["status"] for t in report["tests"]] == ["pass", "fail", "pass"]
    assert [t["score"] for t in report["tests"]] == [1, 0, 1]
    assert report["tests"][1]["message"].startswith("AssertionError: the timer ran twice")
    every = reports.as_exercism(exercise, verdict({1: True, 2: True, 3: True}))
    assert every["status"] == "pass" and sum(t["score"] for t in every["tests"]) == 5
    error = reports.as_exercism(exercise, verdict({1: True, 2: True, 3: True}, ["a (changed)"]))
    assert error["status"] == "error" and "a (changed)" in error["message"]
    assert {t["status"] for t in error["tests"]} == {"error"}
    assert sum(t["score"] for t in error["tests"]) == 0


def test_gradescope_results_have_score_max_score_and_a_test_per_task(tmp_path: Path) -> None:
    exercise = weighted(tmp_path)
    report = reports.as_gradescope(exercise, verdict({1: False, 2: True, 3: True}))
    assert (report["score"], report["max_score"]) == (4, 5)
    assert isinstance(report["output"], str)
    for test, number in zip(report["tests"], [1, 2, 3], strict=True):
        assert {"name", "number", "score", "max_score", "status", "output"} <= set(test)
        assert test["number"] == str(number)
        assert test["status"] in ("passed", "failed")
    assert [(t["score"], t["max_score"]) for t in report["tests"]] == [(0, 1), (3, 3), (1, 1)]
    assert "the timer ran twice" in report["tests"][0]["output"]


def test_every_format_goes_to_its_output_and_the_text_to_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ws"
    assert main(["start", "s1-loop", "--into", str(folder)]) == 0
    capsys.readouterr()
    argv = ["check", "s1-loop", "--in", str(folder)]
    for form in reports.FORMATS:
        argv += ["--format", form, "--output", str(tmp_path / f"out.{form}")]
    status, out = quiet(argv, capsys)
    assert status == 1
    assert "s1-loop: 0 of 3 tasks passed, 0 of 3 points" in out
    for form in reports.FORMATS:
        text = (tmp_path / f"out.{form}").read_text(encoding="utf-8")
        if form == "junit":
            assert ET.fromstring(text).tag == "testsuites"
        elif form == "text":
            assert text.splitlines()[-1] == "s1-loop: 0 of 3 tasks passed, 0 of 3 points"
        else:
            assert json.loads(text)["tests" if form != "json" else "tasks"]
    status, out = quiet(["check", "s1-loop", "--in", str(folder), "--format", "json"], capsys)
    assert status == 1 and json.loads(out)["points"] == 0  # alone, a format goes to the screen
    assert main([*argv, "--format", "json"]) == 2  # a format without its output
    assert "one --format for each --output" in capsys.readouterr().err


# --- item 3: the handout -----------------------------------------------------------------------


def run_tool(
    folder: Path, argv: list[str], python: str = sys.executable, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run the handout's own copy of the tool, in the handout, as a student would."""
    return subprocess.run(
        [python, "-m", "shared.tools.exercises", *argv],
        cwd=folder,
        env=dict(os.environ, PYTHONPATH="", **env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_handout_is_a_repository_for_students(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s1-loop")
    folder = tmp_path / "handout"
    assert main(["handout", "s1-loop", str(folder)]) == 0
    pages = ["README.md", "INSTRUCTIONS.md", "README.zh-CN.md", "INSTRUCTIONS.zh-CN.md"]
    for path in [
        *pages,
        "requirements.txt",
        ".gitignore",
        handout.WORKFLOW,
    ]:
        assert (folder / path).is_file(), path
    # One requirements file, with everything the checks import, lxml among them.
    wanted = (folder / "requirements.txt").read_text(encoding="utf-8").split()
    for package in ["aiohttp", "lxml", "pytest", "pytest-asyncio", "trustme"]:
        assert any(re.match(rf"{package}\b(?![-\w])", line) for line in wanted), package
    # No command that cannot run there: no nox, and every module named is in the handout.
    for page in pages:
        text = (folder / page).read_text(encoding="utf-8")
        assert "nox" not in text and "out/exercises" not in text, page
        for module in re.findall(r"python -m ([\w.]+)", text):
            if module in ("venv", "pip"):
                continue
            as_path = folder / module.replace(".", "/")
            assert as_path.with_suffix(".py").is_file() or (as_path / "__main__.py").is_file(), (
                module
            )
    # The .gitignore keeps the student's work in.
    git = shutil.which("git")
    if git is not None:
        subprocess.run([git, "init", "-q", str(folder)], check=True)
        subprocess.run([git, "-C", str(folder), "add", "-A"], check=True)
        listed = subprocess.run(
            [git, "-C", str(folder), "ls-files"], capture_output=True, text=True, check=True
        ).stdout.split()
        for path in [t.path for t in exercise.replace] + [
            "INSTRUCTIONS.md",
            exercise.tests,
            handout.WORKFLOW,
            manifest.MANIFEST,
            ".exercise.json",
        ]:
            assert path in listed, path
    # The tool is in, the other exercises and the reference are not.
    assert (folder / "shared/tools/exercises/s1-loop/exercise.toml").is_file()
    assert not (folder / "shared/tools/exercises/s2-step").exists()
    assert "raise NotImplementedError" in (folder / "stage1_callbacks/loop.py").read_text()
    ran = run_tool(folder, ["hint", "s1-loop"])  # the handout is its own workspace
    assert ran.returncode == 0 and ran.stdout.startswith("hint 1 of ")
    assert json.loads((folder / ".exercise.json").read_text())["hints_shown"] == 1
    # No language recorded: a Chinese locale gets the Chinese hints; `handout --lang` records one.
    ran = run_tool(folder, ["hint", "s1-loop"], LANG="zh_CN.UTF-8")
    assert ran.returncode == 0 and ran.stdout.startswith("提示 2/"), ran.stdout
    assert main(["handout", "s1-loop", str(tmp_path / "zh"), "--lang", "zh-CN"]) == 0
    assert workspace.language(tmp_path / "zh") == "zh-CN"
    ran = run_tool(folder, ["solve", "s1-loop"])
    assert ran.returncode == 2 and "not in a handout" in ran.stderr
    for verb in (["grade", "s1-loop", "."], ["handout", "s1-loop", "elsewhere"]):
        ran = run_tool(folder, verb)
        assert ran.returncode == 2 and "from the repository" in ran.stderr, verb
    # A handout is only ever made in a new or empty folder.
    assert main(["handout", "s1-loop", str(folder)]) == 2
    assert "not empty" in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_s_instructions_are_rewritten_for_the_handout(name: str) -> None:
    """No nox, no out/, and each `python -m` names a module the handout has."""
    exercise = catalog.named(name)
    for lang in LANGUAGES:
        text = handout.rewrite(exercise.instructions_in(lang).read_text(encoding="utf-8"))
        assert "nox" not in text and "out/exercises" not in text, lang
        assert "python -m shared.tools.exercises check " + name in " ".join(text.split())
    for module in set(re.findall(r"python -m ([\w.]+)", text)):
        as_path = ROOT / module.replace(".", "/")
        assert as_path.with_suffix(".py").is_file() or (as_path / "__main__.py").is_file()
        assert module.partition(".")[0] in checking.PACKAGES  # copied into every handout
        assert not module.startswith("shared.tools.exercises.")


def workflow_steps(text: str) -> list[dict[str, str]]:
    """The steps of the handout's workflow, in order: each key and its one-line value."""
    steps: list[dict[str, str]] = []
    in_steps = False
    for line in text.splitlines():
        if line.strip() == "steps:":
            in_steps = True
            continue
        if not in_steps:
            continue
        if match := re.match(r"^      - ([\w-]+): (.+)$", line):
            steps.append({match[1]: match[2].strip('"')})
        elif (match := re.match(r"^ {8,}([\w-]+): (.+)$", line)) and steps:
            steps[-1][match[1]] = match[2].strip('"')
    return steps


def graders_of(steps: list[dict[str, str]]) -> list[dict[str, str]]:
    """The workflow's grading steps, each of which the reporter step must read."""
    graders = [step for step in steps if step.get("uses", "").startswith(GRADER)]
    assert graders, "a grading step per task"
    (reporter,) = [step for step in steps if step.get("uses", "").startswith(REPORTER)]
    assert reporter["runners"] == ",".join(step["id"] for step in graders)
    for step in graders:
        assert (
            reporter[f"{step['id'].upper()}_RESULTS"]
            == f"${{{{steps.{step['id']}.outputs.result}}}}"
        )
    return graders


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_s_workflow_grades_each_task_for_its_points(name: str) -> None:
    exercise = catalog.named(name)
    graders = graders_of(workflow_steps(handout.workflow(exercise)))
    tasks = tasks_of(exercise)
    assert [step["command"] for step in graders] == [
        f"{handout.TOOL} check {name} --task {n}" for n in tasks
    ]
    assert [int(step["max-score"]) for step in graders] == [exercise.points(n) for n in tasks]


def run_workflow(folder: Path, python_bin: Path) -> int:
    """Run the workflow's steps in its order, as Actions would; return the points it gives.

    Checkout and setup-python are what ``folder`` and ``python_bin`` (a virtualenv's bin)
    already are, and the virtualenv has what the `run:` step (pip install) would install.
    """
    env = dict(os.environ, PATH=f"{python_bin}{os.pathsep}{os.environ['PATH']}", PYTHONPATH="")
    steps = workflow_steps((folder / handout.WORKFLOW).read_text(encoding="utf-8"))
    graders = graders_of(steps)
    points = 0
    for step in steps:
        commands = []
        if step in graders:
            commands = [c for c in (step.get("setup-command"), step["command"]) if c]
        status = 0
        for command in commands:
            status = subprocess.run(
                command, shell=True, cwd=folder, env=env, timeout=600
            ).returncode
            if status:
                break
        if step in graders and status == 0:
            points += int(step["max-score"])
    return points


def results_files(folder: Path, name: str, python_bin: Path, into: Path) -> tuple[int, int]:
    """The points in the Exercism and the Gradescope results files of one `check`."""
    env = dict(os.environ, PATH=f"{python_bin}{os.pathsep}{os.environ['PATH']}", PYTHONPATH="")
    exercism, gradescope = into / "exercism.json", into / "gradescope.json"
    command = ["python", "-m", "shared.tools.exercises", "check", name]
    command += ["--format", "exercism", "--output", str(exercism)]
    command += ["--format", "gradescope", "--output", str(gradescope)]
    subprocess.run(command, cwd=folder, env=env, capture_output=True, timeout=600)
    tests = json.loads(exercism.read_text(encoding="utf-8"))["tests"]
    graded = json.loads(gradescope.read_text(encoding="utf-8"))
    assert graded["score"] == sum(t["score"] for t in graded["tests"])
    return sum(t["score"] for t in tests), graded["score"]


#: The exercise whose handout goes the whole way: three tasks, and checks among the quickest.
WHOLE_WAY = "s2-future"


@pytest.mark.slow
def test_the_handout_s_own_workflow_gives_0_unsolved_and_every_point_solved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One exercise, in the virtualenv these tests run in; every exercise's workflow has the
    same steps (the test above), and every exercise's check judges (tests/test_exercises.py)."""
    exercise = catalog.named(WHOLE_WAY)
    folder = tmp_path / "handout"
    assert main(["handout", WHOLE_WAY, str(folder)]) == 0
    for target in exercise.replace:
        text = (folder / target.path).read_text(encoding="utf-8")
        assert f"write {target.qualname} (see INSTRUCTIONS.md)" in text, f"{target} not emptied"
    python_bin = Path(sys.executable).parent
    assert run_workflow(folder, python_bin) == 0
    assert results_files(folder, WHOLE_WAY, python_bin, tmp_path) == (0, 0)
    assert main(["solve", WHOLE_WAY, "--in", str(folder)]) == 0  # from the repository
    capsys.readouterr()
    for target in exercise.replace:  # the reference, byte for byte
        assert (folder / target.path).read_bytes() == (ROOT / target.path).read_bytes()
    most = full_marks(exercise)
    assert run_workflow(folder, python_bin) == most
    assert results_files(folder, WHOLE_WAY, python_bin, tmp_path) == (most, most)


# --- item 4: grade -------------------------------------------------------------------------------


def test_grade_makes_one_table_and_a_csv_and_an_endless_loop_stops_no_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = {who: tmp_path / who for who in ("solved", "unsolved", "looping", "hollow")}
    for who, folder in folders.items():
        verb = ["handout", "s1-loop", str(folder)] if who == "hollow" else ["start", "s1-loop"]
        assert main(verb if who == "hollow" else [*verb, "--into", str(folder)]) == 0
    assert main(["solve", "s1-loop", "--in", str(folders["solved"])]) == 0
    loop = folders["looping"] / "stage1_callbacks" / "loop.py"
    loop.write_text(
        put_bodies(
            loop.read_text(), {"EventLoop.run_once": "        while True:\n            pass\n"}
        )
    )
    hollow_tests = folders["hollow"] / "tests" / "exercises" / "test_s1_loop.py"
    hollow_tests.write_text(HOLLOW, encoding="utf-8")
    workflow = folders["hollow"] / handout.WORKFLOW  # a handout whose workflow gives it all
    text = workflow.read_text(encoding="utf-8")
    workflow.write_text(re.sub(r"command: .*", "command: 'true'", text), encoding="utf-8")
    capsys.readouterr()
    table = tmp_path / "class.csv"
    argv = ["grade", "s1-loop", *map(str, folders.values()), "--csv", str(table)]
    started = time.monotonic()
    assert main([*argv, "--time-limit", "2", "--total-limit", "60"]) == 0
    took = time.monotonic() - started
    assert took < 240, f"grading took {took:.0f} s"
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["student", "task", "1", "task", "2", "task", "3", "total", "tampered"]
    rows = {line.split()[0]: line.split()[1:] for line in out[1:]}
    assert rows[str(folders["solved"])] == ["1", "1", "1", "3/3", "-"]
    assert rows[str(folders["unsolved"])] == ["0", "0", "0", "0/3", "-"]
    assert rows[str(folders["looping"])] == ["0", "0", "0", "0/3", "-"]
    hollow = rows[str(folders["hollow"])]
    assert hollow[:4] == ["0", "0", "0", "0/3"]  # the repository's tests judged it
    assert " ".join(hollow[4:]) == (
        f"{handout.WORKFLOW} (changed), tests/exercises/test_s1_loop.py (changed)"
    )
    with table.open(encoding="utf-8", newline="") as file:
        lines = list(csv.reader(file))
    assert lines[0][0] == "folder" and lines[0][-2:] == ["total", "max"]
    assert [line[0] for line in lines[1:]] == [str(f) for f in folders.values()]
    assert [line[-2:] for line in lines[1:]] == [["3", "3"], ["0", "3"], ["0", "3"], ["0", "3"]]
    tampered = lines[4][lines[0].index("tampered")].split("; ")
    assert tampered == [
        f"{handout.WORKFLOW} (changed)",
        "tests/exercises/test_s1_loop.py (changed)",
    ]


def test_grade_names_a_folder_that_is_no_workspace_and_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    assert main(["grade", "s1-loop", str(stranger)]) == 0
    out = capsys.readouterr().out
    assert "0/3" in out and "not a workspace of s1-loop" in out


def test_check_task_runs_one_task_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ws"
    assert main(["start", "s2-future", "--into", str(folder)]) == 0
    capsys.readouterr()
    status, out = quiet(
        ["check", "s2-future", "--in", str(folder), "--task", "2", "--format", "json"], capsys
    )
    assert status == 1
    assert [task["number"] for task in json.loads(out)["tasks"]] == [2]
    assert main(["check", "s2-future", "--in", str(folder), "--task", "9"]) == 2
    assert "no task 9" in capsys.readouterr().err


def test_the_manifest_ignores_line_ends_and_caches(tmp_path: Path) -> None:
    assert manifest.digest(b"a\r\nb\r\n") == manifest.digest(b"a\nb\n")
    (tmp_path / "tests" / "__pycache__").mkdir(parents=True)
    (tmp_path / "tests" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "tests" / "a.py").write_text("x = 1\n")
    expected = {"tests/a.py": {manifest.digest(b"x = 1\n")}}
    assert manifest.tampered(tmp_path, expected, ["tests"]) == []
    del expected["tests/a.py"]
    assert manifest.tampered(tmp_path, expected, ["tests"]) == ["tests/a.py (added)"]
