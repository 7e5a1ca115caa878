"""Test configuration: which stages the suite runs, and the test site fixtures.

Adding a stage to ``shared.STAGES`` is all it takes to put it under the whole
suite: every test that asks for the ``stage`` fixture runs once per stage.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared import STAGES as ALL_STAGES
from shared import log
from shared.crawling import Options
from shared.testsite import ServerTLS, Site, local_tls, raw, serve

STAGES = list(ALL_STAGES.values())  # the packages, in the order they are taught


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Add --stage, which narrows the suite to one or more stages, and --storm-runs."""
    parser.addoption(
        "--stage",
        action="append",
        default=[],
        help="run the stage tests for this stage only (stage1, stage2_generators, ...); repeatable",
    )
    parser.addoption(
        "--storm-runs",
        type=int,
        default=9,
        help="crawls interrupted at random moments, per stage and scenario (9)",
    )
    # pyproject.toml's `timeout` is pytest-timeout's.  The suite's sessions install it; a
    # class's environment, where an exercise's tests run, does not (their own conftest
    # bounds each test): there the setting is declared here, read by nobody, so that
    # pytest does not warn a student of an unknown option.
    if not pluginmanager.hasplugin("timeout"):
        parser.addini("timeout", "pytest-timeout's limit per test (not installed here)")
        parser.addini("timeout_method", "pytest-timeout's method (not installed here)")


def _selected(config: pytest.Config) -> list[str]:
    wanted = config.getoption("--stage")
    if not wanted:
        return STAGES
    chosen = [name for name in STAGES if any(name.startswith(w) for w in wanted)]
    if not chosen:
        raise pytest.UsageError(f"--stage {wanted}: choose from {', '.join(STAGES)}")
    return chosen


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that takes ``stage`` over the selected stages, or over those
    of them its ``stages`` marker names: a test about workers is not made for stage 1, rather
    than made and skipped."""
    if "stage" in metafunc.fixturenames:
        names = _selected(metafunc.config)
        if marker := metafunc.definition.get_closest_marker("stages"):
            names = [name for name in names if name in marker.args]
        metafunc.parametrize("stage", names, ids=names, indirect=True)


# The two layers.  The lesson's tests (the oracle suite over the three stages, each
# hand-made framework, the wire parser, the test site, fairness, interrupts, and the
# instruments that read asyncio's internals) run on every Python the project supports:
# what they prove leans on the interpreter (asyncio, selectors, sockets, signals), which
# changes from one version to the next.  The tools' tests (the exercise tool, the pages
# and their translations, the show page, the bench, the side-by-side diff, setup) prove
# plain Python that does not, and run on one version: `nox -s tests` runs `-m lesson`,
# `nox -s tools` runs `-m tools`.  A module not named here is the lesson's, so a new test
# runs on every Python until it is put among the tools.
TESTS = Path(__file__).resolve().parent
TOOL_MODULES = frozenset(
    {
        "test_bench.py",
        "test_browser.py",
        "test_exercise_answers.py",
        "test_exercise_hints.py",
        "test_exercise_language.py",
        "test_exercise_reasons.py",
        "test_exercises.py",
        "test_grading.py",
        "test_labs.py",
        "test_mutants.py",
        "test_readme.py",
        "test_setup.py",
        "test_show.py",
        "test_sidebyside.py",
        "test_tampering.py",
    }
)


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its layer: ``tools`` if its module is a tool module, else ``lesson``."""
    for item in items:
        tool = item.path.parent == TESTS and item.path.name in TOOL_MODULES
        item.add_marker("tools" if tool else "lesson")


@pytest.fixture
def stage(request: pytest.FixtureRequest) -> ModuleType:
    """The stage package under test; it offers ``crawl(roots, options)``."""
    return importlib.import_module(request.param)


@pytest.fixture(scope="session")
def default_site_server() -> Iterator[tuple[Site, str]]:
    """The default test site, served once for the whole session."""
    site = Site()
    with serve(site) as base_url:
        yield site, base_url


@pytest.fixture
def default_site(default_site_server: tuple[Site, str]) -> tuple[Site, str]:
    """The default site with fresh observations and per-URL state, for one test."""
    site, base_url = default_site_server
    site.reset()
    return site, base_url


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> ServerTLS:
    """A throw-away CA, and its certificate for 127.0.0.1 and localhost."""
    return local_tls(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="session")
def https_site_server(test_ca: ServerTLS) -> Iterator[tuple[Site, str]]:
    """The default test site over https, served once for the whole session."""
    site = Site()
    with serve(site, tls=test_ca) as base_url:
        yield site, base_url


@pytest.fixture(params=["http", "https"])
def either_site(request: pytest.FixtureRequest, test_ca: ServerTLS) -> tuple[Site, str, Options]:
    """The default site over http, then over https, with Options that trust its CA."""
    fixture = "default_site_server" if request.param == "http" else "https_site_server"
    site, base_url = request.getfixturevalue(fixture)
    site.reset()
    return site, base_url, Options(cafile=test_ca.cafile)


@pytest.fixture(scope="session")
def lingering_tls_server(test_ca: ServerTLS) -> Iterator[str]:
    """An https server that sends one page, then keeps the connection open until the client
    closes it: shared.testsite.raw.lingering_tls_server, with the test CA's certificate."""
    with raw.lingering_tls_server(test_ca.context) as base_url:
        yield base_url


@pytest.fixture(autouse=True)
def log_level_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts at the crawler's default log level, whatever a command line run
    in an earlier test set (shared/tools/cli.py's configure_logging sets it for the process)."""
    monkeypatch.setattr(log, "threshold", log.threshold)
    monkeypatch.setattr(log, "language", log.language)  # and in the language it was


@pytest.fixture
def logged(monkeypatch: pytest.MonkeyPatch) -> list[log.Record]:
    """The crawler's messages during the test (shared/log.py), every level, in order.

    Those the default level shows are still printed, so a failed test's report has them.
    """
    records: list[log.Record] = []
    shown = log.threshold

    def keep(record: log.Record) -> None:
        records.append(record)
        if record.level >= shown:
            log.write(record)

    monkeypatch.setattr(log, "threshold", log.DEBUG)
    monkeypatch.setattr(log, "handler", keep)
    return records


@pytest.fixture
def ctrl_c_check(tmp_path: Path) -> Callable[[str], dict[str, Any]]:
    """A check, for any crawler module: Ctrl-C mid-crawl gives exit 130 and the partial report.

    Returns the JSON the interrupted crawl wrote, for further checks.
    """

    def check(module: str) -> dict[str, Any]:
        site = Site(pages=400, traps=False, latency=0.2)
        with serve(site) as base_url:
            out = tmp_path / "crawl.json"
            argv = [sys.executable, "-m", module, base_url, "--json", str(out), "-q"]
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 30
            while len(site.requests) < 15 and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
            assert proc.returncode == 130, stderr
            assert "interrupted" in stdout
            doc: dict[str, Any] = json.loads(out.read_text())
            assert doc["interrupted"] is True
            recorded = {f["url"] for f in doc["fetches"]}
            requested = {base_url.rstrip("/") + path for path in site.requests}
            # Every URL the crawler touched is in the report, with its status or its error.
            assert requested <= recorded
            assert 15 <= len(recorded) < len(site.expected(base_url))
            return doc

    return check


# --- the exercise tool --------------------------------------------------------------------
# Its modules are imported inside the fixtures: this file goes into every exercise's
# workspace and handout, which hold the stages and shared/ but not the tools.


@pytest.fixture
def english_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exercise tool in English, whatever this machine's locale: a test reads its sentences."""
    from shared.tools.language import LOCALE_VARIABLES

    for name in LOCALE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for out/exercises/, where default workspaces go: no test touches the real one."""
    from shared.tools.exercises import workspace

    folder = tmp_path / "out-exercises"
    monkeypatch.setattr(workspace, "OUT", folder)
    return folder
