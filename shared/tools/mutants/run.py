"""Run a test selection on each mutant, in a scratch copy of the repository.

The checkout is never written to.  One scratch copy is made per run: the files git
knows of (tracked, or new and not ignored), as the working tree has them, with the
suite, tests/ and pyproject.toml (pytest's settings), taken from wherever the run is
told: a git revision, another folder, or the checkout itself.  Each mutant is written
into the copy, the selection runs in a pytest subprocess of its own (`-x`: the first
failure is enough), and the file is put back.  A run that outlives its time limit is
stopped, with whatever it started, and counts as caught: the mistake made the suite hang.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shared.tools.mutants.mutate import Mutant

#: What pytest is always given: stop at the first failure, quiet, no cache left behind.
PYTEST_ARGS = ("-x", "-q", "-p", "no:cacheprovider")
#: The verdicts: the first three mean the suite noticed.
KILLED, TIMEOUT, ERROR, SURVIVED = "killed", "timeout", "error", "survived"
CAUGHT = (KILLED, TIMEOUT, ERROR)


class RunError(RuntimeError):
    """A scratch copy that cannot be made, or a selection that fails without any mutant."""


@dataclass(frozen=True)
class Outcome:
    """What one pytest run said: its verdict, how long it took, the first test that failed."""

    verdict: str
    seconds: float
    first_failure: str = ""


def git(root: Path, *args: str) -> bytes:
    """Run git in the repository at ``root``; return its output (raise RunError on failure)."""
    ran = subprocess.run(["git", "-C", str(root), *args], capture_output=True)
    if ran.returncode:
        raise RunError(f"git {' '.join(args)}: {ran.stderr.decode(errors='replace').strip()}")
    return ran.stdout


def scratch_copy(root: Path, into: Path, tests_from: str | None, tests_dir: Path | None) -> None:
    """Fill ``into`` with the repository's files and the suite asked for.

    ``tests_from`` is a git revision whose tests/ and pyproject.toml replace the
    checkout's; ``tests_dir`` a folder copied as tests/.  With neither, the checkout's own.
    """
    listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    replaced = tests_from is not None or tests_dir is not None
    for name in listed.decode("utf-8").split("\0"):
        if not name or (replaced and (name.startswith("tests/") or name == "pyproject.toml")):
            continue
        if tests_from is not None and name == "pyproject.toml":
            continue
        source = root / name
        if not source.is_file():
            continue  # listed by git, deleted in the working tree
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    if tests_from is not None:
        archive = git(root, "archive", "--format=tar", tests_from, "tests", "pyproject.toml")
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(into, filter="data")
    elif tests_dir is not None:
        shutil.copytree(tests_dir, into / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(root / "pyproject.toml", into / "pyproject.toml")


def select_files(tree: Path, patterns: Sequence[str]) -> list[str]:
    """The test files of the copy's tests/ whose path matches each pattern, in pattern order.

    A pattern is matched against the path below tests/ (``exercises/test_s2_*.py``) and
    against the file's name alone, so a file moved to another folder is still found.
    """
    tests = tree / "tests"
    every = sorted(p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py"))
    chosen: list[str] = []
    for pattern in patterns:
        for name in every:
            path = Path(name)
            if (path.match(pattern) or Path(path.name).match(pattern)) and name not in chosen:
                chosen.append(name)
    return [f"tests/{name}" for name in chosen]


def environment(tree: Path) -> dict[str, str]:
    """The subprocess's environment: the copy first on the path, and no bytecode written.

    No bytecode, because a mutated file and the original can have the same size and the
    same modification second, and a cached .pyc of one would then stand for the other.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


#: A line of pytest's short summary: FAILED or ERROR and a test's id (not a logged ERROR).
SUMMARY_LINE = re.compile(r"(FAILED|ERROR) (tests/\S+)")


def first_failure(output: str) -> str:
    """The first FAILED or ERROR line of pytest's summary, shortened, or ''."""
    for line in output.splitlines():
        if SUMMARY_LINE.match(line):
            return line if len(line) <= 200 else line[:197] + "..."
    return ""


def failed_test(line: str) -> str | None:
    """The id of the test a summary line names, or None."""
    match = SUMMARY_LINE.match(line)
    return match[2] if match else None


def run_pytest(tree: Path, args: Sequence[str], limit: float) -> Outcome:
    """Run pytest in ``tree`` with ``args``; the verdict as if a mutant were in the copy."""
    argv = [sys.executable, "-m", "pytest", *PYTEST_ARGS, *args]
    started = time.monotonic()
    posix = os.name == "posix"
    with subprocess.Popen(
        argv,
        cwd=tree,
        env=environment(tree),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=posix,  # a group of its own: a kill takes its servers with it
    ) as proc:
        try:
            output, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            if posix:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.communicate()
            return Outcome(TIMEOUT, round(time.monotonic() - started, 1), f"over {limit:g} s")
    seconds = round(time.monotonic() - started, 1)
    if proc.returncode == 0:
        return Outcome(SURVIVED, seconds)
    last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
    if proc.returncode == 1:
        return Outcome(KILLED, seconds, first_failure(output) or last[:200])
    # 2: interrupted (a collection error: the module no longer imports), 3: internal
    # error, 4: usage error, 5: nothing collected.  The last two are the selection's fault.
    tail = " | ".join(line for line in output.splitlines()[-3:] if line.strip())
    if proc.returncode in (4, 5):
        raise RunError(f"pytest {' '.join(args)} exited {proc.returncode}: {tail}")
    return Outcome(ERROR, seconds, first_failure(output) or tail[:200])


def run_mutant(tree: Path, mutant: Mutant, args: Sequence[str], limit: float) -> Outcome:
    """Write the mutant into the copy, run pytest with ``args``, and put the file back."""
    file = tree / mutant.path
    original = file.read_bytes()
    try:
        file.write_bytes(mutant.apply(original.decode("utf-8")).encode("utf-8"))
        return run_pytest(tree, args, limit)
    finally:
        file.write_bytes(original)
