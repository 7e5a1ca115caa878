"""The exercises' tests: a time limit on every test, and results by task for `check`.

Each test here judges one numbered task of an exercise (`@pytest.mark.task(taskno=N)`).
This plugin, active for the tests in this folder only, does four things:

- It bounds every test in time.  A student's endless loop, or a select() that nothing
  will ever wake, becomes a failed test that says so, instead of a check that never
  ends.  Where there are no POSIX interval timers (Windows), only the whole check's
  limit applies.
- Under `python -m shared.tools.exercises check`, whose runner (shared/tools/exercises/
  runner.py) gives pytest a plugin named `exercise-results`, it sends what happened to
  each test through that plugin, one record at a time, as it happens: a check stopped
  from outside keeps what was already sent.  The plugin signs each record and writes
  it to a pipe only `check` reads; nothing about it is in the environment or on disk.
- Under `check` again, it proves that the code under test came from the workspace and
  not from the repository: it records the file of every module of the crawlers that
  was imported, and stops the run if one lies outside the workspace.
- Under `check --task N`, it keeps task N's tests and leaves the others out.

The names of the environment variables and of the plugin are the tool's
(shared/tools/exercises/checking.py and runner.py), written twice because a workspace
has this file but not always the tool.

Why not pytest-timeout and pytest-reportlog: the limit here knows the tasks (a task that
ran out of time fails its other tests unrun) and says one sentence to a student, where
pytest-timeout's signal method prints every thread's stack and a fixed "Timeout" line;
and `check` needs each result's task and one-line reason beside the proof of where the
modules came from, which a report log would still have to be given by a plugin like
this one.  Both would be one more dependency in every handout for less than this does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

RESULTS_PLUGIN = "exercise-results"  # the plugin `check` reads the results from
WORKSPACE_ENV = "EXERCISE_WORKSPACE"  # the workspace every module under test must come from
TIME_LIMIT_ENV = "EXERCISE_TIME_LIMIT"  # seconds per test, instead of the default
ONLY_TASK_ENV = "EXERCISE_ONLY_TASK"  # `check --task N`: run that task's tests alone
# Two knobs for the suite's own checks of the exercises (tests/test_exercise_answers.py),
# which want one verdict per task and no more: only these tasks' tests ("1,3"), and a
# task's other tests failed unrun once one has failed (its first reason is the verdict).
TASKS_ENV = "EXERCISE_TASKS"
FIRST_FAILURE_ENV = "EXERCISE_FIRST_FAILURE"
DEFAULT_TIME_LIMIT = 20.0
FIRST_PARTY = ("shared", "stage1_callbacks", "stage2_generators", "stage3_asyncio")
HERE = Path(__file__).resolve().parent


class TimeLimitExceeded(BaseException):
    """A test ran past its time limit.

    A BaseException, like KeyboardInterrupt, so that no `except Exception` on the way
    out swallows it: stage 1's loop hands every Exception of a callback to its handler
    and carries on, and would carry on looping.
    """


def time_limit() -> float:
    """The time limit of one test, in seconds."""
    return float(os.environ.get(TIME_LIMIT_ENV, DEFAULT_TIME_LIMIT))


def limit_message(seconds: float) -> str:
    """What a test that ran too long reports."""
    return f"took longer than {seconds:g} s: an endless loop, or a wait nothing ends?"


def caught_message(seconds: float) -> str:
    """What a test reports that went on after its time limit stopped it."""
    return (
        f"went on after its {seconds:g} s were up: an `except BaseException` (or a bare "
        "`except:`) caught the stop; catch Exception, and let the rest through"
    )


#: The test phase running now, for a stop that the code under test caught (`bounded`).
_phase: dict[str, Any] = {}
#: How long a test that caught its stop has to end before the check is ended under it.
GRACE = 2.0


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Raise TimeLimitExceeded in this thread if the block runs longer than ``seconds``.

    SIGALRM interrupts even a select() that blocks: its handler raises, and Python
    lets the exception out of the call instead of retrying it (PEP 475).
    """
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    expired = False

    def expire(signum: int, frame: FrameType | None) -> None:
        nonlocal expired
        if expired and _sinks and _phase:
            # The first stop was caught, and the test runs on: under `check`, its phase
            # fails with the reason, and the run ends here, rather than run on until the
            # whole check's limit (the tasks not run yet are failed "not run").
            record({**_phase, "outcome": "failed", "reason": caught_message(seconds)})
            os._exit(3)
        expired = True
        signal.setitimer(signal.ITIMER_REAL, GRACE)  # again, if this one is caught
        raise TimeLimitExceeded(limit_message(seconds))

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def task_of(item: pytest.Item) -> int | None:
    """The task number a test is marked with, or None."""
    marker = item.get_closest_marker("task")
    if marker is None:
        return None
    number = marker.kwargs.get("taskno", marker.args[0] if marker.args else None)
    return number if isinstance(number, int) else None


_sinks: list[Callable[[dict[str, Any]], None]] = []  # the results plugin's, under `check`


def pytest_configure(config: pytest.Config) -> None:
    """Under `check`, find the plugin its runner gave pytest, by name."""
    _sinks[:] = [
        plugin.record
        for plugin in config.pluginmanager.get_plugins()
        if getattr(plugin, "name", None) == RESULTS_PLUGIN
    ][:1]


def record(entry: dict[str, Any]) -> None:
    """Send one record to `check`, if this run is one of its checks."""
    for sink in _sinks:
        sink(entry)


def outcome_of(call: pytest.CallInfo[None]) -> str:
    """passed, skipped or failed: read from what the phase raised, not from the report,
    whose class code under test could have patched."""
    if call.excinfo is None:
        return "passed"
    return "skipped" if call.excinfo.errisinstance(pytest.skip.Exception) else "failed"


def first_party_modules() -> dict[str, str]:
    """The file of every module of the crawlers imported so far, by module name."""
    found = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name.partition(".")[0] in FIRST_PARTY and file:
            found[name] = str(Path(file).resolve())
    return found


def mine(item: pytest.Item) -> bool:
    """Tell whether a test belongs to the exercises (this folder), not the main suite."""
    return HERE in Path(item.path).resolve().parents


# The tasks one of whose tests ran out of time, as (test module, task number): the main
# suite runs every exercise's tests together, and each has its own task 1.
_timed_out: set[tuple[Path, int]] = set()
_failed: set[tuple[Path, int]] = set()  # the tasks one of whose tests failed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only some tasks' tests: task N's under `check --task N` (one grading step per
    task), or those EXERCISE_TASKS lists ("1,3", for the suite's own checks)."""
    only, wanted = os.environ.get(ONLY_TASK_ENV), os.environ.get(TASKS_ENV)
    if not only and not wanted:
        return
    tasks = {int(n) for n in (only or wanted or "").split(",")}
    dropped = [item for item in items if mine(item) and task_of(item) not in tasks]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


@contextlib.contextmanager
def phase(item: pytest.Item, when: str) -> Iterator[None]:
    """Note which test phase runs, for a stop the code under test catches (`bounded`)."""
    _phase.update(event="report", id=item.nodeid, task=task_of(item), when=when)
    try:
        yield
    finally:
        _phase.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Bound the test's fixtures in time; after a test ran out of time, fail its task's others.

    A task is failed once one of its tests is: running its other tests into the same
    endless loop would only make the student wait longer for the same answer.
    """
    task = task_of(item)
    if task is not None and (item.path, task) in _timed_out:
        reason = f"not run: a test of task {task} already {limit_message(time_limit())}"
        pytest.fail(reason, pytrace=False)
    if task is not None and (item.path, task) in _failed and os.environ.get(FIRST_FAILURE_ENV):
        pytest.fail(f"not run: a test of task {task} failed already", pytrace=False)
    with phase(item, "setup"), bounded(time_limit()):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Bound the test itself in time."""
    with phase(item, "call"), bounded(time_limit()):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """Bound the test's clean-up in time."""
    with phase(item, "teardown"), bounded(time_limit()):
        return (yield)


def short_reason(call: pytest.CallInfo[None]) -> str:
    """The first line of what went wrong, whole: `check` shortens what can be said shorter
    (an object's repr) and wraps the sentence to the reader's screen, but never cuts it."""
    if call.excinfo is None:
        return ""
    if call.excinfo.errisinstance((TimeLimitExceeded, pytest.fail.Exception)):
        text = str(call.excinfo.value)  # its words say it all: no type name before them
    else:
        text = call.excinfo.exconly()
    return (text.strip().splitlines() or ["?"])[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[pytest.TestReport]:
    """Write the outcome of each phase of a test (setup, call, teardown) to the results."""
    report: pytest.TestReport = yield
    task = task_of(item)
    if task is not None and call.excinfo and call.excinfo.errisinstance(TimeLimitExceeded):
        _timed_out.add((item.path, task))
    outcome = outcome_of(call)
    if task is not None and outcome == "failed":
        _failed.add((item.path, task))
    record(
        {
            "event": "report",
            "id": item.nodeid,
            "task": task,
            "when": call.when,
            "outcome": outcome,
            "reason": short_reason(call) if outcome != "passed" else "",
        }
    )
    return report


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Record a test module that could not be collected (an import error, say), and why."""
    if report.failed:
        lines = [line for line in str(report.longrepr).splitlines() if line.strip()]
        errors = [line[1:].strip() for line in lines if line.startswith("E ")]
        record({"event": "collect-error", "id": report.nodeid, "reason": (errors or lines)[-1]})


def prove_workspace(insist: bool) -> None:
    """Record where the crawlers' modules came from; if ``insist``, stop on one from elsewhere.

    Under `check` the workspace comes first on sys.path, so this never stops a run
    that `check` started: it is the proof that the student's code is what was tested.
    """
    files = first_party_modules()
    record({"event": "modules", "files": files})
    workspace = os.environ.get(WORKSPACE_ENV)
    if workspace and insist:
        root = Path(workspace).resolve()
        strays = [
            f"{name} ({file})" for name, file in files.items() if root not in Path(file).parents
        ]
        if strays:
            raise pytest.UsageError(f"not imported from the workspace {root}: {', '.join(strays)}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Record the tests to run and their tasks, and where the code under test came from."""
    tests = [{"id": item.nodeid, "task": task_of(item)} for item in session.items if mine(item)]
    record({"event": "collected", "tests": tests})
    prove_workspace(insist=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record the modules again: a test may import more of the code than its module did."""
    prove_workspace(insist=False)  # `check` judges these itself
