"""Sessions: `nox -s tests tools`, `nox -s lint`, `nox -s stage1|stage2|stage3 -- [ROOT ...]`.

A bare `nox` runs lint, tests (once per version in PYTHONS that nox finds) and tools.
Every session a class uses requires the session `class`, whose environment, .nox/class,
they share: nox makes it once and reuses it, and its pip run is skipped while
pyproject.toml's lists are unchanged (no `-R` needed).  The code
runs from the checkout, never installed: an edit to a stage counts at once, and after
`nox -s setup` no class command needs the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"  # nox.project.dependency_groups
nox.options.sessions = ["lint", "tests", "tools"]
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")
PYTHONS = ["3.11", "3.12", "3.13", "3.14"]
# The stages by short name, read from their folders (stage1_callbacks/ is stage1):
# nox's own Python, which may be older than the project's, imports nothing of ours.
STAGES = {
    folder.name.partition("_")[0]: folder.name
    for folder in sorted(Path().glob("stage*_*"))  # nox runs a noxfile in its own folder
    if (folder / "__main__.py").is_file()
}

# nox may run on a Python older than the project's (3.10, say): the class then runs on
# the newest 3.11+ on PATH, and without one, stops at once with a sentence (False).
CLASS_PYTHON: str | bool | None = None  # None: nox's own
if sys.version_info < (3, 11):  # noqa: UP036 (the noxfile runs on nox's Python)
    found = (version for version in reversed(PYTHONS) if shutil.which(f"python{version}"))
    CLASS_PYTHON = next(found, False)


# pytest-xdist's workers for `tests` and `tools`: two per core, at most eight.  The tests
# wait more than they compute (servers that stall, timeouts, tries), so a second worker
# per core runs while the first waits: on two cores, the tools' tests took 9m42 with one
# worker per core and 4m34 with two.  Eight bounds the memory of a many-core machine (each
# tools worker opens its own headless Chromium).  `-- -n 0` runs them in one process.
WORKERS = str(min(2 * (os.cpu_count() or 1), 8))


def wanted(*groups: str) -> list[str]:
    """The project's packages and these dependency groups, as pyproject.toml lists them."""
    found = list(PYPROJECT["project"]["dependencies"])
    for group in groups:
        found += nox.project.dependency_groups(PYPROJECT, group)
    return found


def install(session: nox.Session, *groups: str, pip_args: tuple[str, ...] = ()) -> None:
    """Install the project's packages and these dependency groups, in one pip run."""
    session.install(*pip_args, *wanted(*groups))


def run_class(session: nox.Session, *argv: str) -> None:
    """Run `python ARGV...` in the class's environment, from the checkout."""
    python = Path(".nox", "class", "Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        session.error(".nox/class was not made (see above): run `nox -s setup` again")
    session.run(str(python), *argv, external=True)


@nox.session(name="class", python=CLASS_PYTHON, default=False)
def class_env(session: nox.Session) -> None:
    """The class's environment, .nox/class: the crawlers' packages and what checks need."""
    if CLASS_PYTHON is False:
        session.error(
            f"nox runs on Python {sys.version.split()[0]} and found no Python 3.11 or newer "
            "on this machine: install one (from python.org, `py install 3.12` on Windows, or "
            "`pyenv install 3.12`), then run nox with it: `python3.12 -m pip install nox` "
            "and `python3.12 -m nox -s setup`"
        )
    # A requiring session's posargs (a crawl's URLs) reach here: only `--wheels DIR` counts.
    wheels = session.posargs[1:2] if session.posargs[:1] == ["--wheels"] else []
    pip_args = ("--no-index", "--find-links", *wheels) if wheels else ()
    # Every class command requires this session: pip runs only when what it would install
    # changed (pyproject.toml's lists, or --wheels), so a command starts at once, no -R
    # needed.  The stamp lives in the venv: a venv nox makes anew has none.
    stamp = Path(session.virtualenv.location, "installed-for-class.txt")
    digest = hashlib.sha256(json.dumps([wanted("check"), pip_args]).encode()).hexdigest()
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        session.log(".nox/class holds pyproject.toml's packages already: no pip run")
        return
    install(session, "check", pip_args=pip_args)
    stamp.write_text(digest, encoding="utf-8")


@nox.session(python=False, requires=["class"])
def setup(session: nox.Session) -> None:
    """Before class, at home: build .nox/class, then say whether the class is ready.

    `nox -s setup -- --wheels DIR` installs from a folder `nox -s wheelhouse` filled,
    with no index at all.
    """
    if session.posargs and (session.posargs[0] != "--wheels" or len(session.posargs) != 2):
        session.error("usage: nox -s setup [-- --wheels DIR]")
    run_class(session, "-m", "shared.tools.ready")


@nox.session(python=False, requires=["class"], default=False)
def wheelhouse(session: nox.Session) -> None:
    """For a room without network: `nox -s wheelhouse -- DIR` fills DIR with every wheel."""
    if not session.posargs:
        session.error("usage: nox -s wheelhouse -- DIR")
    run_class(session, "-m", "shared.tools.wheelhouse", *session.posargs)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The lesson's tests; `nox -s tests-3.12 -- --stage stage3 -k redirect` narrows them."""
    install(session, "test")
    # Generated responses for the wire parser: 2,000 on the first version, 300 on others;
    # generated URLs (tests/test_links.py): 1,500 on the first, 250 on others.
    profile = os.environ.get("HYPOTHESIS_PROFILE", "wire-quick")
    env = {} if session.python == PYTHONS[0] else {"HYPOTHESIS_PROFILE": profile}
    # python -m: the checkout on sys.path.  worksteal: a worker that is done takes tests
    # from a busy one, so no long test is left queued behind others at the end.
    argv = ["-m", "pytest", "-m", "lesson", "-n", WORKERS, "--dist", "worksteal"]
    session.run("python", *argv, *session.posargs, env=env)


@nox.session(python=CLASS_PYTHON or None)
def tools(session: nox.Session) -> None:
    """The tools' tests (exercises, pages, show, bench, diff, setup), on one Python."""
    install(session, "test")
    # Each xdist worker opens its own headless Chromium; servers on port 0, files in tmp_path.
    argv = ["-m", "pytest", "-m", "tools", "-n", WORKERS, "--dist", "worksteal"]
    session.run("python", *argv, *session.posargs)


@nox.session(python=CLASS_PYTHON or None)
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy --strict on shared/ and the stages."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


@nox.session(python=PYTHONS[0], default=False)
def aiohttp_floor(session: nox.Session) -> None:
    """Stage 3's tries and odd responses on the oldest aiohttp pyproject.toml allows."""
    install(session, "test")
    [floor] = [spec for spec in PYPROJECT["project"]["dependencies"] if "aiohttp>=" in spec]
    session.install(floor.replace(">=", "=="))
    pytest = ["python", "-m", "pytest", "--stage", "stage3"]
    session.run(*pytest, "tests/test_fairness.py", "tests/test_stage3.py")
    session.run(*pytest, "tests/test_crawl.py", "-k", "wire or hostile or host_name")


@nox.session(python=False, requires=["class"])
def stage1(session: nox.Session) -> None:
    """Crawl with stage 1 (callbacks). No args: the built-in test site."""
    run_class(session, "-m", "stage1_callbacks", *session.posargs)


@nox.session(python=False, requires=["class"])
def stage2(session: nox.Session) -> None:
    """Crawl with stage 2 (generator coroutines). No args: the built-in test site."""
    run_class(session, "-m", "stage2_generators", *session.posargs)


@nox.session(python=False, requires=["class"])
def stage3(session: nox.Session) -> None:
    """Crawl with stage 3 (asyncio and aiohttp). No args: the built-in test site."""
    run_class(session, "-m", "stage3_asyncio", *session.posargs)


@nox.session(python=False, requires=["class"])
def trace(session: nox.Session) -> None:
    """Watch a stage's loop step by step on a 6-page site: `nox -s trace -- stage2`."""
    name, *extra = session.posargs or ["stage1"]
    if name not in STAGES:
        session.error(f"which stage? one of {', '.join(STAGES)}")
    demo = ["--trace", "--max-tasks", "2", "--site-pages", "6", "--ignore-robots", "-q"]
    run_class(session, "-m", STAGES[name], *demo, *extra)


def install_selenium(session: nox.Session) -> None:
    """Add selenium (the test group's pin) to .nox/class: a teacher's tool drives Chromium."""
    selenium = [s for s in nox.project.dependency_groups(PYPROJECT, "test") if "selenium" in s]
    run_class(session, "-m", "pip", "install", "--quiet", *selenium)


@nox.session(python=False, requires=["class"])
def show(session: nox.Session) -> None:
    """Step through a crawl in a browser: `nox -s show -- stage2|all` writes out/show-STAGE.html."""
    if any(arg.startswith("--screenshot") for arg in session.posargs):
        # Headless Chromium takes the picture, driven by selenium: the teacher's, not the class's.
        install_selenium(session)
    run_class(session, "-m", "shared.tools.show", *(session.posargs or ["stage2"]))


@nox.session(python=False, requires=["class"])
def diff(session: nox.Session) -> None:
    """Two stages' crawlers side by side: `nox -s diff -- stage1 stage2 [--html|--unified]`."""
    run_class(session, "-m", "shared.tools.sidebyside", *session.posargs)


@nox.session(python=False, requires=["class"])
def compare(session: nox.Session) -> None:
    """The stages and a thread pool on one site: a table, pictures in out/ (`-- --readme`)."""
    run_class(session, "-m", "shared.tools.bench.compare", *session.posargs)


@nox.session(python=False, requires=["class"], default=False)
def bench(session: nox.Session) -> None:
    """The benchmark (about 4 minutes, quiet) to out/results.json: `-- --quick` for a smoke run."""
    if "--markdown" not in session.posargs:
        # S4 opens the browser site in headless Chromium, driven by selenium: the teacher's
        # tool, as show's screenshots are.  Without it, S4 would say it was skipped.
        install_selenium(session)
    run_class(session, "-m", "shared.tools.bench.bench", *session.posargs)


@nox.session(python=False, requires=["class"], default=False)
def browser(session: nox.Session) -> None:
    """The exercises that run in a browser tab, as a static site: out/browser/ (npm, once)."""
    run_class(session, "-m", "shared.tools.browser", "build", *session.posargs)


@nox.session(python=False, requires=["class"], default=False)
def exercise(session: nox.Session) -> None:
    """Exercises and labs: `nox -s exercise -- list | start | check | hint | solve | lab`."""
    try:
        run_class(session, "-m", "shared.tools.exercises", *session.posargs)
    except nox.command.CommandFailed as failed:
        # nox ends every failed session with 1; the tool's own status tells more (1: a
        # task failed, 2: the check could not be made), and graders read it.
        raise SystemExit(failed.return_code) from None
