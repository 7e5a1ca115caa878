"""Sessions: `nox -s tests`, `nox -s lint`, `nox -s stage1|stage2|stage3 -- [ROOT ...] [options]`.

A bare `nox` runs lint and tests.  nox builds each session's virtualenv itself, so a
machine needs only Python and nox.  The tests run once per Python in PYTHONS that the
machine has (`nox -s tests-3.12` runs one); the other sessions use nox's own Python.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"  # nox.project.dependency_groups
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
# The one list of the stages is shared.STAGES.  shared/__init__.py needs only the standard
# library, so nox's own Python imports it from the checkout, with nothing installed.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shared import STAGES  # noqa: E402 (after the path it is found on)

PYTHONS = ["3.11", "3.12", "3.13", "3.14"]


def add_pyenv_pythons(versions: list[str]) -> None:
    """Put pyenv's installed interpreters of these versions at the end of PATH.

    pyenv's shims run only the versions selected with `pyenv global` or `pyenv local`, so
    `python3.12` may be on PATH and still refuse to start.  The interpreters themselves
    are in `$(pyenv root)/versions/3.12.N/bin`: appended, they come after what PATH
    already has, which still wins.  Without pyenv this does nothing.
    """
    root = os.environ.get("PYENV_ROOT")
    if not root and (pyenv := shutil.which("pyenv")):
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
    if not root:
        return
    release = re.compile(r"(\d+\.\d+)\.(\d+)")  # 3.12.1; not 3.13.0t, 3.14-dev or pypy
    found: list[tuple[int, str]] = []
    for folder in Path(root, "versions").glob("*/bin"):
        match = release.fullmatch(folder.parent.name)
        if match and match[1] in versions:
            found.append((int(match[2]), str(folder)))
    found.sort(reverse=True)  # the newest patch release of a version first
    path = [os.environ.get("PATH", ""), *(folder for _, folder in found)]
    os.environ["PATH"] = os.pathsep.join(filter(None, path))


add_pyenv_pythons(PYTHONS)


def install(session: nox.Session, *groups: str) -> None:
    """Install the project (editable: a reused env never runs stale code) and dependency groups."""
    session.install("-e", ".")
    for group in groups:
        session.install(*nox.project.dependency_groups(PYPROJECT, group))


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite; `nox -s tests-3.12 -- --stage stage3 -k redirect` narrows it."""
    install(session, "test")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHONS[0], default=False)
def aiohttp_floor(session: nox.Session) -> None:
    """Stage 3's tests on the oldest aiohttp that pyproject.toml allows (`aiohttp>=X`: X).

    Stage 3 turns off aiohttp's own retry through a private attribute (see
    stage3_asyncio/crawler.py); tests/test_fairness.py checks that aiohttp still reads it.
    The tests session runs it on the newest aiohttp, this one on the floor of the range.
    """
    install(session, "test")
    dependencies = PYPROJECT["project"]["dependencies"]
    [floor] = [
        spec.removeprefix("aiohttp>=") for spec in dependencies if spec.startswith("aiohttp>=")
    ]
    session.install(f"aiohttp=={floor}")
    session.run("pytest", "tests/test_fairness.py", "tests/test_stage3.py", "--stage", "stage3")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy --strict on shared/ and the stages."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


def run_stage(session: nox.Session, package: str) -> None:
    """Install the project and run one stage's command line with the session's arguments."""
    install(session)
    session.run("python", "-m", package, *session.posargs)


@nox.session
def stage1(session: nox.Session) -> None:
    """Crawl with stage 1 (callbacks). No args: the built-in test site."""
    run_stage(session, STAGES["stage1"])


@nox.session
def stage2(session: nox.Session) -> None:
    """Crawl with stage 2 (generator coroutines). No args: the built-in test site."""
    run_stage(session, STAGES["stage2"])


@nox.session
def stage3(session: nox.Session) -> None:
    """Crawl with stage 3 (asyncio and aiohttp). No args: the built-in test site."""
    run_stage(session, STAGES["stage3"])


@nox.session(python=False)
def diff(session: nox.Session) -> None:
    """Two stages' crawlers side by side, paired by function: `nox -s diff -- stage1 stage2`.

    No stages: stage2 stage3.  `--html` writes the same as a page (out/diff-A-B.html, or
    `--out PATH`); `--unified` prints a unified diff.  shared/tools/sidebyside.py needs only
    the standard library, so it runs on nox's own Python, with nothing to install.
    """
    session.run(sys.executable, "-m", "shared.tools.sidebyside", *session.posargs)


@nox.session(python=False, default=False)
def pythons(session: nox.Session) -> None:
    """The Python each tests-X.Y session will run on, or that it will be skipped."""
    for version in PYTHONS:
        session.log(f"tests-{version}: {find_python(version) or 'not found, will be skipped'}")


def find_python(version: str) -> str | None:
    """The first `pythonX.Y` on PATH that starts (a pyenv shim may refuse to): its full name.

    nox looks in a few more places (on Windows, the py launcher); on Linux and macOS,
    where PATH and pyenv are where the Pythons are, this finds what nox finds.
    """
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if program := shutil.which(f"python{version}", path=folder):
            itself = ["-c", "import sys; print(sys.executable, sys.version.split()[0])"]
            ran = subprocess.run([program, *itself], capture_output=True, text=True)
            if ran.returncode == 0:
                return ran.stdout.strip()
    return None


@nox.session
def trace(session: nox.Session) -> None:
    """Watch a stage's loop step by step on a 6-page site: `nox -s trace -- stage2`."""
    install(session)
    name, *extra = session.posargs or ["stage1"]
    if name not in STAGES:
        session.error(f"which stage? one of {', '.join(STAGES)}")
    demo = ["--trace", "--max-tasks", "2", "--site-pages", "6", "--ignore-robots", "-q"]
    session.run("python", "-m", STAGES[name], *demo, *extra)


@nox.session
def show(session: nox.Session) -> None:
    """Step through a crawl in a browser: `nox -s show -- stage2|all` writes out/show-STAGE.html."""
    install(session)
    if any(arg.startswith("--screenshot") for arg in session.posargs):  # by headless Chromium
        test_group = nox.project.dependency_groups(PYPROJECT, "test")
        session.install(*(spec for spec in test_group if spec.startswith("selenium")))
    session.run("python", "-m", "shared.tools.show", *(session.posargs or ["stage2"]))


def posix_only(session: nox.Session) -> None:
    """Stop with status 2 where compare and bench cannot run: they fork and read getrusage."""
    if os.name != "posix":
        session.warn(
            f"nox -s {session.name} measures with fork() and the resource module, which "
            "Windows does not have: run it on Linux or macOS."
        )
        raise SystemExit(2)  # not nox's 1 for a failed session: this one cannot run here


@nox.session
def compare(session: nox.Session) -> None:
    """The stages and a thread pool on one site: a table, three pictures in out/ (--out DIR).

    `nox -s compare -- --readme` redraws the README's pictures, in shared/tools/bench/.
    """
    posix_only(session)
    install(session)
    session.run("python", "-m", "shared.tools.bench.compare", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The benchmark (about 7 minutes) to out/results.json: `-- --quick` for a smoke run."""
    posix_only(session)
    install(session)
    session.run("python", "-m", "shared.tools.bench.bench", *session.posargs)


@nox.session(default=False)
def exercise(session: nox.Session) -> None:
    """Exercises: `nox -s exercise -- list | start NAME | check NAME | hint NAME | solve NAME`.

    The project itself is not installed here, on purpose: the only copy of the stages
    a check can import is the workspace's (the tool runs from the repository's root,
    and puts the workspace on the path of the tests it runs).
    """
    session.install(*PYPROJECT["project"]["dependencies"])
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    # Run directly rather than with session.run, to keep the tool's exit status: 1 for a
    # failed check, 2 for a request it could not carry out (nox would make both 1).
    python = Path(session.bin, "python")
    status = subprocess.run(
        [str(python), "-m", "shared.tools.exercises", *session.posargs]
    ).returncode
    if status:
        raise SystemExit(status)
