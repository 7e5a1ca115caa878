"""Sessions: `nox -s tests tools`, `nox -s lint`, `nox -s stage1|stage2|stage3 -- [ROOT ...]`.

A bare `nox` runs lint, tests and tools.  nox builds each session's virtualenv itself, so
a machine needs only Python and nox.  The lesson's tests run once per Python in PYTHONS
that the machine has (`nox -s tests-3.12` runs one); the tools' tests once, on the
Python lint runs on (tests/conftest.py says which test is which).

The sessions a class uses (the stages, trace, show, diff, compare, exercise) share one
environment, .nox/class, made by `nox -s setup` or by the first of them to run: its
packages are installed once, when it is made, and the code runs from the checkout,
never installed, so no later run needs the network (and an edit to a stage counts at
once).  They run on nox's own Python when it is 3.11 or newer, else on the newest 3.11+
this machine has.
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
nox.options.sessions = ["lint", "tests", "tools"]
nox.options.reuse_venv = "yes"  # nox's own: a session's environment is kept; -R skips installs

PYPROJECT = nox.project.load_toml("pyproject.toml")
# The stages by short name, read from their folders (stage1_callbacks/ is stage1), the
# same as shared.STAGES: nox's own Python, which may be older, imports nothing of ours.
STAGES = {
    folder.name.partition("_")[0]: folder.name
    for folder in sorted(Path(__file__).resolve().parent.glob("stage*_*"))
    if (folder / "__main__.py").is_file()
}

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


def choose_class_python() -> tuple[str | None, str]:
    """The Python the class's sessions run on, and a sentence that says which, or why none.

    nox's own when it is 3.11 or newer; else the newest of PYTHONS found, so that a
    machine whose nox came with an older Python still runs everything on one that works.
    """
    running = ".".join(map(str, sys.version_info[:3]))
    # The noxfile runs on the Python nox came with, which may be older than the project's.
    if sys.version_info >= (3, 11):  # noqa: UP036
        return sys.executable, f"Python {running} ({sys.executable})"
    for version in reversed(PYTHONS):
        if found := find_python(version):
            program, full = found.rsplit(" ", 1)
            return program, f"Python {full} ({program}): nox itself runs on {running}"
    return None, (
        f"nox runs on Python {running} and found no Python 3.11 or newer on this machine: "
        "install one (from python.org, `py install 3.12` on Windows, or `pyenv install "
        "3.12`), then run nox with it: `python3.12 -m pip install nox` and "
        "`python3.12 -m nox -s setup`"
    )


CLASS_PYTHON, CLASS_PYTHON_SAYS = choose_class_python()
# The tests session names its versions; lint and tools run on nox's own Python, or on an
# older nox, on the class's.
ONE_PYTHON = None if sys.version_info >= (3, 11) else CLASS_PYTHON
CLASS_ENV = Path(".nox", "class")  # nox runs a noxfile in its own folder: the repository's
CLASS_BIN = CLASS_ENV / ("Scripts" if os.name == "nt" else "bin")


def class_requirements() -> list[str]:
    """What the class's environment holds: the crawlers' packages and what checks need."""
    project: list[str] = PYPROJECT["project"]["dependencies"]
    return [*project, *nox.project.dependency_groups(PYPROJECT, "check")]


def class_env(session: nox.Session, pip_args: tuple[str, ...] = ()) -> str:
    """The Python of .nox/class, made and filled the first time, and after a change only.

    The list of what was installed is kept in the environment: the same list next time
    means nothing to do, so a class that ran `nox -s setup` at home needs no network.
    """
    if CLASS_PYTHON is None:
        session.error(CLASS_PYTHON_SAYS)
    python = CLASS_BIN / ("python.exe" if os.name == "nt" else "python")
    wanted = "\n".join(class_requirements()) + "\n"
    installed = CLASS_ENV / "requirements.txt"
    if python.exists() and installed.exists() and installed.read_text("utf-8") == wanted:
        return str(python)
    if not python.exists():
        session.log(f"making {CLASS_ENV} with {CLASS_PYTHON_SAYS}")
        session.run(CLASS_PYTHON, "-m", "venv", str(CLASS_ENV), external=True)
    asked = CLASS_ENV / "requirements.in"
    asked.write_text(wanted, "utf-8")
    session.run(str(python), "-m", "pip", "install", *pip_args, "-r", str(asked), external=True)
    asked.replace(installed)  # written last: an install cut short is tried again next time
    return str(python)


def install(session: nox.Session, *groups: str) -> None:
    """Install the project's packages and dependency groups; the code itself runs from here."""
    # One pip run: it resolves everything at once, and starts once.
    wanted = list(PYPROJECT["project"]["dependencies"])
    for group in groups:
        wanted += nox.project.dependency_groups(PYPROJECT, group)
    session.install(*wanted)


@nox.session(python=False)
def setup(session: nox.Session) -> None:
    """Before class, at home: check Python, build .nox/class, say whether all is ready.

    `nox -s setup -- --wheels DIR` installs from a folder `nox -s wheelhouse` filled,
    with no index at all.
    """
    if CLASS_PYTHON is None:
        session.error(CLASS_PYTHON_SAYS)
    session.log(f"the class's sessions will run on {CLASS_PYTHON_SAYS}")
    pip_args: tuple[str, ...] = ()
    if session.posargs[:1] == ["--wheels"] and len(session.posargs) == 2:
        pip_args = ("--no-index", "--find-links", session.posargs[1])
    elif session.posargs:
        session.error("usage: nox -s setup [-- --wheels DIR]")
    python = class_env(session, pip_args)
    missing = [
        name
        for name in ("aiohttp", "lxml", "pytest", "pytest_asyncio", "trustme")
        if subprocess.run([python, "-c", f"import {name}"], capture_output=True).returncode
    ]
    listing = subprocess.run(
        [python, "-m", "shared.tools.exercises", "list", "--names"], capture_output=True
    )
    if listing.returncode:
        missing.append("the exercise tool (python -m shared.tools.exercises) does not start")
    if missing:
        session.error(f"not ready: missing {', '.join(missing)}; run nox -s setup again")
    disk = sum(path.stat().st_size for path in CLASS_ENV.rglob("*") if path.is_file()) / 1e6
    session.log(
        f"ready for class: {CLASS_ENV} ({disk:.0f} MB on disk) has everything; the class's "
        "sessions need no network from now on"
    )


@nox.session(python=False, default=False)
def wheelhouse(session: nox.Session) -> None:
    """For a room without network: `nox -s wheelhouse -- DIR` fills DIR with every wheel.

    Linux, macOS and Windows, Python 3.11 to 3.14, and DIR/requirements.txt; what each
    system takes, and its size, in DIR/wheels.txt.  See shared/tools/wheelhouse.py.
    """
    if not session.posargs:
        session.error("usage: nox -s wheelhouse -- DIR")
    run_class(session, "-m", "shared.tools.wheelhouse", *session.posargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The lesson's tests; `nox -s tests-3.12 -- --stage stage3 -k redirect` narrows them."""
    install(session, "test")
    env = {}
    first = next((version for version in PYTHONS if find_python(version)), None)
    if session.python != first and "HYPOTHESIS_PROFILE" not in os.environ:
        # The wire parser's generated responses (tests/test_httpwire_reference.py): 2,000
        # a property on the first Python found, 300 on the others.
        env["HYPOTHESIS_PROFILE"] = "wire-quick"
    # python -m: the checkout on sys.path; -n auto: a process per core (pytest-xdist).  A
    # `-m` or `-n` in the posargs replaces the one here (`-- -n 0`: one process).
    argv = ["-m", "pytest", "-m", "lesson", "-n", "auto", *session.posargs]
    session.run("python", *argv, env=env)


@nox.session(python=ONE_PYTHON)
def tools(session: nox.Session) -> None:
    """The tools' tests (exercises, pages, show, bench, diff, setup), on one Python."""
    install(session, "test")
    # -n auto as in the tests session: each worker a process of its own, each with its own
    # headless Chromium, servers on port 0 and files in tmp_path; `-- -n 0`: one process.
    session.run("python", "-m", "pytest", "-m", "tools", "-n", "auto", *session.posargs)


@nox.session(python=PYTHONS[0], default=False)
def aiohttp_floor(session: nox.Session) -> None:
    """Stage 3's tests on the oldest aiohttp that pyproject.toml allows (`aiohttp>=X`: X).

    Stage 3 counts its tries with aiohttp's middlewares and trace configs (see
    stage3_asyncio/crawler.py); tests/test_fairness.py checks the count on the floor too.
    What a response means must not depend on aiohttp's version either: the hostile
    catalogues (tests/test_crawl.py) give stage 3 the same records on the floor.  The
    tests session runs all this on the newest aiohttp, this one on the floor of the range.
    """
    install(session, "test")
    dependencies = PYPROJECT["project"]["dependencies"]
    [floor] = [
        spec.removeprefix("aiohttp>=") for spec in dependencies if spec.startswith("aiohttp>=")
    ]
    session.install(f"aiohttp=={floor}")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/test_fairness.py",
        "tests/test_stage3.py",
        "--stage",
        "stage3",
    )
    catalogues = "wire or hostile or host_name"  # the wire and hostile catalogues, host names
    session.run(
        "python", "-m", "pytest", "tests/test_crawl.py", "-k", catalogues, "--stage", "stage3"
    )


@nox.session(python=ONE_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy --strict on shared/ and the stages."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


def run_class(session: nox.Session, *argv: str) -> None:
    """Run `python ARGV...` in the class's environment, from the checkout."""
    session.run(class_env(session), *argv, external=True)


@nox.session(python=False)
def stage1(session: nox.Session) -> None:
    """Crawl with stage 1 (callbacks). No args: the built-in test site."""
    run_class(session, "-m", "stage1_callbacks", *session.posargs)


@nox.session(python=False)
def stage2(session: nox.Session) -> None:
    """Crawl with stage 2 (generator coroutines). No args: the built-in test site."""
    run_class(session, "-m", "stage2_generators", *session.posargs)


@nox.session(python=False)
def stage3(session: nox.Session) -> None:
    """Crawl with stage 3 (asyncio and aiohttp). No args: the built-in test site."""
    run_class(session, "-m", "stage3_asyncio", *session.posargs)


@nox.session(python=False)
def diff(session: nox.Session) -> None:
    """Two stages' crawlers side by side, paired by function: `nox -s diff -- stage1 stage2`.

    No stages: stage2 stage3.  `--html` writes the same as a page (out/diff-A-B.html, or
    `--out PATH`); `--unified` prints a unified diff.  shared/tools/sidebyside.py needs only
    the standard library, so it runs on the class's Python with nothing installed.
    """
    if CLASS_PYTHON is None:
        session.error(CLASS_PYTHON_SAYS)
    session.run(CLASS_PYTHON, "-m", "shared.tools.sidebyside", *session.posargs, external=True)


@nox.session(python=False, default=False)
def pythons(session: nox.Session) -> None:
    """The Python each session will run on; a tests-X.Y session without one is skipped."""
    for version in PYTHONS:
        session.log(f"tests-{version}: {find_python(version) or 'not found, will be skipped'}")
    session.log(f"lint and tools: {ONE_PYTHON or sys.executable}")
    session.log(f"the class's sessions: {CLASS_PYTHON_SAYS}")


@nox.session(python=False)
def trace(session: nox.Session) -> None:
    """Watch a stage's loop step by step on a 6-page site: `nox -s trace -- stage2`."""
    name, *extra = session.posargs or ["stage1"]
    if name not in STAGES:
        session.error(f"which stage? one of {', '.join(STAGES)}")
    demo = ["--trace", "--max-tasks", "2", "--site-pages", "6", "--ignore-robots", "-q"]
    run_class(session, "-m", STAGES[name], *demo, *extra)


@nox.session(python=False)
def show(session: nox.Session) -> None:
    """Step through a crawl in a browser: `nox -s show -- stage2|all` writes out/show-STAGE.html."""
    python = class_env(session)
    screenshot = any(arg.startswith("--screenshot") for arg in session.posargs)
    if screenshot and subprocess.run([python, "-c", "import selenium"]).returncode:
        # Headless Chromium takes the picture, driven by selenium: the teacher's, not the class's.
        test_group = nox.project.dependency_groups(PYPROJECT, "test")
        selenium = [spec for spec in test_group if spec.startswith("selenium")]
        session.run(python, "-m", "pip", "install", *selenium, external=True)
    run_class(session, "-m", "shared.tools.show", *(session.posargs or ["stage2"]))


@nox.session(python=False)
def compare(session: nox.Session) -> None:
    """The stages and a thread pool on one site: a table, three pictures in out/ (--out DIR).

    `nox -s compare -- --readme` redraws the README's pictures, in shared/tools/bench/.
    On Windows, which has no fork() nor resource module, it leaves out peak memory.
    """
    run_class(session, "-m", "shared.tools.bench.compare", *session.posargs)


@nox.session(python=False, default=False)
def bench(session: nox.Session) -> None:
    """The benchmark (about 4 minutes, quiet) to out/results.json: `-- --quick` for a smoke run."""
    run_class(session, "-m", "shared.tools.bench.bench", *session.posargs)


@nox.session(python=False, default=False)
def exercise(session: nox.Session) -> None:
    """Exercises and labs: `nox -s exercise -- list | start | check | hint | solve | lab`.

    The stages are never installed, on purpose: the only copy of them a check can
    import is the workspace's (the tool runs from the repository's root, and puts the
    workspace on the path of the tests it runs).
    """
    python = class_env(session)
    # Run directly rather than with session.run, to keep the tool's exit status: 1 for a
    # failed check, 2 for a request it could not carry out (nox would make both 1).
    status = subprocess.run([python, "-m", "shared.tools.exercises", *session.posargs]).returncode
    if status:
        raise SystemExit(status)
