"""`check`: run one exercise's tests on a workspace, and judge each task.

The tests never run in the workspace itself.  They run in a scratch copy of it, into
which the files that judge the exercise (the tests, their conftest and support files,
the test site: see manifest.py) are put as the repository has them, or, in a handout,
as the manifest vouches for them: a test the student edited, or a conftest.py the
student added, takes no part.  pytest runs in `python -I runner.py` (runner.py says how):
the copy is its working directory and the first folder of its path, so `import
stage1_callbacks` finds the student's code.  tests/exercises/conftest.py bounds each
test in time and sends a record per test phase through the runner, which signs it with
a secret made for this run alone and writes it to a pipe this module reads.  This module
counts only signed records, one verdict per test phase, for the tests the teacher's copy
of the test module defines; checks the recorded proof that the code under test came
from the copy; and groups the tests by task.  A task passes when every one of its tests
passed.  Anything else in the records (an unsigned line, a second verdict, a test the
module does not define) marks the results as tampered with, and scores nothing.

With ``isolated`` (what `grade` asks for), the interpreter is the base Python outside
any virtualenv, run with `-I -S`: the path is the scratch copy and a folder of the
packages the checks need (grading.py makes it), and the environment keeps no variable
that names a folder of the teacher's (`outside`).  From there no reference solution can
be found.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.tools.exercises import manifest, sandbox
from shared.tools.exercises.catalog import Exercise, tasks_in
from shared.tools.exercises.messages import again, say

# The environment variables tests/exercises/conftest.py reads: its own copy of the names.
WORKSPACE_ENV = "EXERCISE_WORKSPACE"
TIME_LIMIT_ENV = "EXERCISE_TIME_LIMIT"
ONLY_TASK_ENV = "EXERCISE_ONLY_TASK"
#: The student's code, copied into the scratch tree as it is.
PACKAGES = ("shared", "stage1_callbacks", "stage2_generators", "stage3_asyncio")
DEFAULT_TIME_LIMIT = 20.0
RUNNER = Path(__file__).resolve().with_name("runner.py")


#: What the inside of a repr in a reason says, and how a student reads it better: an
#: object by its class (``<stage2_generators.tasks.Task object at 0x7fe4...>`` is ``Task``),
#: a function, method, generator or coroutine by its name, an asyncio task by its name.
REPRS = (
    (re.compile(r"(?:[\w.]+\.)?(\w+) object at 0x[0-9a-fA-F]+"), r"\1"),
    (re.compile(r"(generator|coroutine) object ([\w.<>]+) at 0x[0-9a-fA-F]+"), r"\1 \2"),
    (re.compile(r"(?:built-in )?function ([\w.<>]+) at 0x[0-9a-fA-F]+"), r"\1"),
    (re.compile(r"bound method ([\w.<>]+) of .*", re.DOTALL), r"\1"),
    (re.compile(r"(Task|Future)\b.*? name='([^']*)'.*", re.DOTALL), r"\1 '\2'"),
    (re.compile(r"(?:[\w.]+\.)?socket\b.*?(fd=-?\d+).*", re.DOTALL), r"socket \1"),
)


def shorter_reprs(text: str) -> str:
    """``text`` with each repr of an object said by its name (see REPRS), innermost first;
    a repr none of them matches stays as it is."""
    done: list[str] = []
    opened: list[int] = []  # where each `<` still open starts, in ``done``'s characters
    for char in text:
        if char == "<":
            opened.append(len(done))
        elif char == ">" and opened:
            start = opened.pop()
            inside = "".join(done[start + 1 :])
            for pattern, name in REPRS:
                if pattern.fullmatch(inside):
                    done[start:] = list(pattern.sub(name, inside))
                    break
            else:
                done.append(char)
            continue
        done.append(char)
    return "".join(done)


@dataclass
class TaskResult:
    """The verdict on one task: passed, or failed and the first reason why."""

    number: int
    passed: bool = True
    reasons: list[str] = field(default_factory=list)
    tests: int = 0
    ids: list[str] = field(default_factory=list)  # the tests of the task, as pytest names them

    def fail(self, reason: str) -> None:
        """Mark the task failed; the first reason is the one shown."""
        self.passed = False
        self.reasons.append(reason)

    def line(self, lang: str = "en") -> str:
        """The task's line of the check's output, in ``lang`` (a test's own words as they are)."""
        if self.passed:
            return say(lang, "task.passed", number=self.number)
        reason = again(shorter_reprs(self.reasons[0]), lang)
        if self.tests > 1:
            failed, tests = len(self.reasons), self.tests
            return say(
                lang,
                "task.failed-of",
                number=self.number,
                reason=reason,
                failed=failed,
                tests=tests,
            )
        return say(lang, "task.failed", number=self.number, reason=reason)


@dataclass
class CheckResult:
    """Every task's verdict, and the problems that concern no task in particular."""

    tasks: list[TaskResult]
    problems: list[str]
    tampered: list[str] = field(default_factory=list)  # protected files changed, by name
    #: Whether the tests got to run: not when the files that judge were changed, nor when
    #: pytest stopped before the first test (a package missing, say).  A student's
    #: endless loop, stopped from outside, did run.
    ran: bool = True

    @property
    def passed(self) -> bool:
        """True exactly when there are tasks, all passed, and nothing else went wrong."""
        if self.tampered or self.problems:
            return False
        return bool(self.tasks) and all(t.passed for t in self.tasks)


#: How a line about the student's own code begins ("PATH:LINE: " or "PATH: "), where one
#: about a file has the file's path and then its state in brackets.
CODE = re.compile(r"\S+?:(?:\d+:)? ")


def not_judged(tasks: Iterable[int], tampered: list[str]) -> CheckResult:
    """The verdict on a workspace whose tests were changed: every task failed, unrun."""
    # Only the student's own code refused: say so, not that judging files changed.
    own = bool(tampered) and all(CODE.match(entry) for entry in tampered)
    reason = say("en", "reason.code-refused" if own else "reason.not-judged")
    return CheckResult([TaskResult(n, False, [reason]) for n in tasks], [], tampered, ran=False)


def not_run(stopped: str | None) -> str:
    """Why a test did not run: the run was stopped (and why), or it was not reached."""
    return (
        say("en", "reason.not-run-because", why=stopped) if stopped else say("en", "reason.not-run")
    )


def default_total_limit(time_limit: float) -> float:
    """The limit of a whole check: room for a few tests that run out of time, and start-up.

    A task stops at its first test that runs out of time (see the plugin), so a check
    of a handful of tasks that all loop forever ends within a few time limits.
    """
    return 10 * time_limit + 60


def read_records(text: str, secret: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records the runner signed with ``secret``, and how many lines it did not sign.

    A last line cut short by a kill is left out, and not counted.
    """
    records, forged = [], 0
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        try:
            signed = json.loads(line)
            mac = hmac.new(secret, signed["record"].encode(), hashlib.sha256).hexdigest()
            if not hmac.compare_digest(mac, signed["mac"]):
                raise ValueError("not signed with the secret")
            records.append(json.loads(signed["record"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            cut = number == len(lines) - 1 and not line.endswith("\n")
            forged += 0 if cut or not line.strip() else 1
    return records, forged


def test_functions(test_module: str) -> dict[str, frozenset[int]]:
    """Each test function of the teacher's test module, and the tasks it may be marked with:
    the one its decorators name, or where they name none (the marks are on its parameters,
    say) any task of the module."""
    every = frozenset(tasks_in(test_module))
    functions: dict[str, frozenset[int]] = {}
    for node in ast.parse(test_module).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            named = tasks_in("\n".join(ast.unparse(d) for d in node.decorator_list))
            functions[node.name] = frozenset(named) if len(named) == 1 else every
    return functions


def forgeries(
    records: list[dict[str, Any]], forged: int, expected: dict[str, frozenset[int]] | None
) -> list[str]:
    """What in the records no honest run writes: unsigned lines, a second list of tests or a
    second verdict on a test phase, a test the teacher's module does not define."""
    found = [say("en", "results.unsigned", count=forged)] if forged else []
    collected = [r for r in records if r.get("event") == "collected"]
    if len(collected) > 1:
        found.append(say("en", "results.twice", what="the list of tests"))
    seen: set[tuple[str, str]] = set()
    ids = {t["id"] for c in collected for t in c["tests"]}
    for entry in records:
        if entry.get("event") != "report":
            continue
        phase = (entry["id"], entry["when"])
        if phase in seen:
            found.append(say("en", "results.twice", what=f"{entry['id']} ({entry['when']})"))
        elif entry["id"] not in ids:
            found.append(say("en", "results.unknown", test=entry["id"]))
        seen.add(phase)
    if expected is not None:
        for test in collected[-1]["tests"] if collected else []:
            function = test["id"].partition("::")[2].partition("[")[0]
            if test["task"] not in expected.get(function, ()):
                found.append(say("en", "results.unknown", test=test["id"]))
    return found[:3]


def judge(
    records: list[dict[str, Any]],
    expected_tasks: Iterable[int],
    exercise: Exercise,
    workspace: Path,
    stopped: str | None,
    every_module: bool = True,
    expected_tests: dict[str, frozenset[int]] | None = None,
    forged: int = 0,
) -> CheckResult:
    """Turn the plugin's records into a verdict per task.

    ``expected_tasks`` are the tasks the test module marks, read from its text, so a
    task whose tests never ran is still reported (failed).  ``stopped`` says why the
    run was cut short, if it was.  ``every_module``: each module the exercise empties
    must have been imported (not so when one task's tests ran alone: task 1 of per-host
    is stage 1's alone).  ``expected_tests`` are the teacher's test functions and their
    tasks (`test_functions`): each of them that did not run fails its task, and a test
    that is not one of them, like ``forged`` unsigned lines, marks the results tampered.
    """
    problems: list[str] = []
    tasks = {n: TaskResult(n) for n in expected_tasks}
    collected = [r for r in records if r["event"] == "collected"]
    collect_errors = [r["reason"] for r in records if r["event"] == "collect-error"]
    reports: dict[str, list[dict[str, Any]]] = {}
    for entry in records:
        if entry["event"] == "report":
            reports.setdefault(entry["id"], []).append(entry)

    tests = collected[-1]["tests"] if collected else []
    unmarked = [t["id"] for t in tests if t["task"] is None]
    if unmarked:
        problems.append(say("en", "problem.unmarked", tests=", ".join(unmarked)))
    for test in tests:
        if test["task"] is None:
            continue
        task = tasks.setdefault(test["task"], TaskResult(test["task"]))
        task.tests += 1
        task.ids.append(test["id"])
        phases = reports.get(test["id"], [])
        failures = [p for p in phases if p["outcome"] != "passed"]
        if failures:
            failure = failures[0]
            skipped = failure["outcome"] == "skipped"
            task.fail(
                say("en", "reason.skipped", reason=failure["reason"])
                if skipped
                else failure["reason"]
            )
        elif not any(p["when"] == "call" for p in phases):
            task.fail(not_run(stopped))

    for task in tasks.values():
        if task.tests == 0 and task.passed:
            if collect_errors:
                task.fail(say("en", "reason.not-loaded", error=collect_errors[0]))
            elif stopped:
                task.fail(not_run(stopped))
            else:
                task.fail(say("en", "reason.no-test"))

    # The proof: each module the exercise empties was imported, from the workspace.
    modules = [r["files"] for r in records if r["event"] == "modules"]
    if modules:
        files = modules[-1]
        root = workspace.resolve()
        for target in exercise.replace:
            file = files.get(target.module)
            if file is None and every_module:
                problems.append(say("en", "problem.never-imported", module=target.module))
            elif file is not None and root not in Path(file).parents:
                problems.append(say("en", "problem.elsewhere", module=target.module, file=file))
    elif tests:
        problems.append(say("en", "problem.no-proof"))
    ran = {t["id"].partition("::")[2].partition("[")[0] for t in tests}
    for function, numbers in (expected_tests or {}).items():
        for number in numbers & set(tasks) if function not in ran else ():
            tasks[number].fail(say("en", "reason.missing", test=function))
    result = CheckResult(sorted(tasks.values(), key=lambda t: t.number), problems)
    result.tampered = forgeries(records, forged, expected_tests)
    if result.tampered:
        for task in result.tasks:
            task.fail(say("en", "reason.forged"))
            task.reasons.insert(0, task.reasons.pop())
    return result


def judging_tree(exercise: Exercise, workspace: Path, pristine: Path, into: Path) -> None:
    """Fill ``into`` with the workspace's code and the judging files as ``pristine`` has them."""
    ignore = shutil.ignore_patterns(*manifest.CACHES, "*.pyc")
    for package in PACKAGES:
        if (workspace / package).is_dir():
            # A link is copied as a link, never followed: what it names is not the
            # student's (grade names every link as tampering before it gets here).
            shutil.copytree(workspace / package, into / package, ignore=ignore, symlinks=True)
    for path in manifest.judging_files(exercise, pristine):
        (into / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pristine / path, into / path)


def run_check(
    exercise: Exercise,
    workspace: Path,
    time_limit: float = DEFAULT_TIME_LIMIT,
    total_limit: float | None = None,
    verbose: bool = False,
    pristine: Path | None = None,
    only_task: int | None = None,
    isolated: Path | None = None,
) -> CheckResult:
    """Run the exercise's tests on the workspace's code and judge them.

    ``pristine`` holds the judging files to use (by default the workspace's own, which
    the caller has checked against the manifest); ``only_task`` runs one task's tests.
    ``isolated`` is a folder of the packages the checks need: given, the tests run in
    the base Python with that folder and the scratch copy alone on the path.
    """
    workspace = workspace.resolve()
    pristine = workspace if pristine is None else pristine.resolve()
    total = default_total_limit(time_limit) if total_limit is None else total_limit
    module = (pristine / exercise.tests).read_text(encoding="utf-8")
    expected = tasks_in(module)
    functions = test_functions(module)
    if only_task is not None:
        expected = [n for n in expected if n == only_task]
        functions = {name: n & {only_task} for name, n in functions.items() if only_task in n}
    with tempfile.TemporaryDirectory(prefix="exercise-check-") as scratch:
        tree = Path(scratch, "tree").resolve()
        judging_tree(exercise, workspace, pristine, tree)
        runner = Path(scratch, "runner.py")
        shutil.copyfile(RUNNER, runner)
        # The tests start in an empty folder: nothing of the teacher's (or of the student's
        # folder) is its working directory, or one path away.
        empty = Path(scratch, "work").resolve()
        empty.mkdir()
        env = dict(os.environ)
        env.pop(ONLY_TASK_ENV, None)
        env.update(
            {
                "PYTHONDONTWRITEBYTECODE": "1",
                WORKSPACE_ENV: str(tree),
                TIME_LIMIT_ENV: f"{time_limit:g}",
            }
        )
        if only_task is not None:
            env[ONLY_TASK_ENV] = str(only_task)
        python, flags, path = sys.executable, ["-I"], [str(tree)]
        if isolated is not None:
            python, flags = base_python(), ["-I", "-S"]
            path.append(str(isolated))
            env = outside(env, pristine)
        secret = secrets.token_bytes(32)
        argv = [
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tree),
            "-c",
            str(tree / "pyproject.toml"),
        ]
        argv += [str(tree / exercise.tests)]
        argv += ["-v", "--tb=short"] if verbose else ["-q", "--tb=no", "--no-header"]
        order: dict[str, Any] = {"path": path, "argv": argv, "secret": secret.hex()}
        if isolated is not None:
            order["limits"] = LIMITS
        command = [python, *flags, str(runner)]
        if isolated is not None:
            sandbox.become_subreaper()  # what a check leaves behind is handed to us, and ended
            env["TMPDIR"] = tempfile.gettempdir() if sandbox.bubblewrap() is None else "/tmp"
            base = Path(sys.base_prefix).resolve()
            command = sandbox.wrap(command, [base, isolated.resolve()], [Path(scratch)], empty)
        stopped, signed, output = _run(command, empty, env, total, order)
        records, forged = read_records(signed, secret)
        result = judge(
            records,
            expected,
            exercise,
            tree,
            stopped,
            every_module=only_task is None,
            expected_tests=functions,
            forged=forged,
        )
        result.ran = bool(records) or stopped is not None
    # Speak of the student's files, not of the scratch copy that is gone now.
    output = output.replace(str(tree), str(workspace))
    for task in result.tasks:
        task.reasons = [reason.replace(str(tree), str(workspace)) for reason in task.reasons]
    result.problems = [problem.replace(str(tree), str(workspace)) for problem in result.problems]
    if verbose:
        print(output, end="")
    if not records and output.strip():
        # pytest stopped before the plugin could write anything: its own words say why.
        tail = [line for line in output.splitlines() if line.strip()][-3:]
        result.problems.append(say("en", "problem.pytest", tail=" | ".join(tail)))
    return result


def base_python() -> str:
    """The Python this one's virtualenv (if any) was made from: it lives outside the clone."""
    return getattr(sys, "_base_executable", None) or sys.executable


#: What the isolated environment keeps of the teacher's: the language, the time zone, the
#: temporary folder, and what Windows needs to start a process.  Nothing that names a
#: folder the teacher works in (a clone, a virtualenv, the current folder).
KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT")


def outside(env: dict[str, str], clone: Path) -> dict[str, str]:
    """The environment for an isolated run: KEPT_VARIABLES (where they do not name
    ``clone``), the check's own EXERCISE_ variables, and the system's default PATH."""
    where = str(clone.resolve())
    kept = {
        name: value
        for name, value in env.items()
        if (name in KEPT_VARIABLES or name.startswith("EXERCISE_")) and where not in value
    }
    kept["PATH"] = os.defpath
    return kept


#: What one student's check may take under `grade` (runner.bound): 4 GiB of memory, files
#: of 256 MiB (the sandbox's /tmp is memory too).  Far more than any answer needs.
LIMITS = {"RLIMIT_AS": 4 << 30, "RLIMIT_FSIZE": 256 << 20}
#: How much of a check's output is kept: the signed records (a few kilobytes an honest
#: run), and the end of pytest's output (what a problem quotes).  A flood is drained and
#: dropped, never held.
RECORDS_CAP = 16 << 20
OUTPUT_CAP = 256 << 10


class Drain:
    """Read a pipe to its end in a thread, keeping its first (or last) ``cap`` characters."""

    def __init__(self, pipe: Any, cap: int, keep_end: bool = False) -> None:
        self.pipe, self.cap, self.keep_end = pipe, cap, keep_end
        self.kept: list[str] = []
        self.size = 0
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self) -> None:
        """Take every chunk, keep what fits (see the class)."""
        with contextlib.suppress(OSError, ValueError):  # closed under us: the end
            while chunk := self.pipe.read(1 << 16):
                if self.keep_end:
                    self.kept.append(chunk)
                    self.size += len(chunk)
                    while self.size - len(self.kept[0]) > self.cap:
                        self.size -= len(self.kept.pop(0))
                elif self.size < self.cap:
                    self.kept.append(chunk[: self.cap - self.size])
                    self.size += len(self.kept[-1])

    def text(self) -> str:
        """What was kept."""
        return "".join(self.kept)


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], limit: float, order: dict[str, Any]
) -> tuple[str | None, str, str]:
    """Run the runner with an outer time limit; return why it was stopped (or None), the
    signed records it wrote, and pytest's output.

    ``order`` goes to the runner's standard input, the only place it is written.  The child
    leads a session of its own; when it ends, or when ``limit`` seconds are up, the whole
    session and everything it left behind is killed (sandbox.end_all) before its output is
    read to the end: a process a check left running can neither hold the pipes open nor
    touch the next folder's check.
    """
    posix = os.name == "posix"
    started = time.monotonic()
    before = set(sandbox.children().get(os.getpid(), []))
    stopped: str | None = None
    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=posix,
    ) as proc:
        records, output = Drain(proc.stdout, RECORDS_CAP), Drain(proc.stderr, OUTPUT_CAP, True)
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # it may be gone already
            proc.stdin.write(json.dumps(order) + "\n")
            proc.stdin.close()
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            spent = time.monotonic() - started
            stopped = say("en", "limit.whole", seconds=f"{spent:.0f}")
        sandbox.end_all(proc, before)  # what it started ends with it, on time or not
        for drain in (records, output):
            drain.thread.join(timeout=5)
            if drain.thread.is_alive():  # held open by something outside our reach
                drain.pipe.close()
        signed, text = records.text(), output.text()
    return stopped, signed, text
