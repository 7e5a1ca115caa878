"""Sessions: `nox -s tests`, `nox -s lint`, `nox -s stage1|stage2|stage3 -- [ROOT ...] [options]`.

A bare `nox` runs lint and tests.  nox builds each session's virtualenv itself, so a
machine needs only Python and nox.
"""

from __future__ import annotations

import nox

nox.needs_version = ">=2024.3.2"
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
STAGES = {"stage1": "stage1_callbacks", "stage2": "stage2_generators", "stage3": "stage3_asyncio"}


def install(session: nox.Session, *groups: str) -> None:
    """Install the project (editable: a reused env never runs stale code) and dependency groups."""
    session.install("-e", ".")
    for group in groups:
        session.install(*nox.project.dependency_groups(PYPROJECT, group))


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite; `nox -s tests -- --stage stage3 -k redirect` narrows it."""
    install(session, "test")
    session.run("pytest", *session.posargs)


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
    run_stage(session, "stage1_callbacks")


@nox.session
def stage2(session: nox.Session) -> None:
    """Crawl with stage 2 (generator coroutines). No args: the built-in test site."""
    run_stage(session, "stage2_generators")


@nox.session
def stage3(session: nox.Session) -> None:
    """Crawl with stage 3 (asyncio and aiohttp). No args: the built-in test site."""
    run_stage(session, "stage3_asyncio")


@nox.session(python=False)
def diff(session: nox.Session) -> None:
    """Show two stages' crawlers side by side: `nox -s diff -- stage2 stage3` (the default)."""
    names = session.posargs or ["stage2", "stage3"]
    if len(names) != 2:
        session.error("give two stages, for example: nox -s diff -- stage1 stage2")
    files = [f"{STAGES.get(name, name)}/crawler.py" for name in names]
    # diff exits 1 when the files differ, which is the whole point here.
    session.run("diff", "-u", *files, external=True, success_codes=[0, 1])


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
def compare(session: nox.Session) -> None:
    """The stages and a thread pool on one site: a table and shared/bench/compare.svg."""
    install(session)
    session.run("python", "-m", "shared.bench.compare", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The benchmark (about 8 minutes): `nox -s bench -- --quick` for a smoke run."""
    install(session)
    session.run("python", "-m", "shared.bench.bench", *session.posargs)
