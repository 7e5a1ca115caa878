"""Test configuration: which stages the suite runs, and the test site fixtures.

Adding a stage's package name to ``STAGES`` is all it takes to put it under the whole
suite: every test that asks for the ``stage`` fixture runs once per stage.
"""

from __future__ import annotations

import faulthandler
import importlib
from collections.abc import Iterator
from types import ModuleType

import pytest

from shared.testsite import Site, serve

STAGES = ["stage1_callbacks", "stage2_generators", "stage3_asyncio"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add --stage, which narrows the suite to one or more stages."""
    parser.addoption(
        "--stage",
        action="append",
        default=[],
        help="run the stage tests for this stage only (stage1, stage2_generators, ...); repeatable",
    )


def _selected(config: pytest.Config) -> list[str]:
    wanted = config.getoption("--stage")
    if not wanted:
        return STAGES
    chosen = [name for name in STAGES if any(name.startswith(w) for w in wanted)]
    if not chosen:
        raise pytest.UsageError(f"--stage {wanted}: choose from {', '.join(STAGES)}")
    return chosen


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that takes ``stage`` over the selected stages."""
    if "stage" in metafunc.fixturenames:
        names = _selected(metafunc.config)
        metafunc.parametrize("stage", names, ids=names, indirect=True)


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


HANG_LIMIT_S = 120  # far above any test's time: only a hang ever reaches it


@pytest.fixture(autouse=True)
def no_hangs() -> Iterator[None]:
    """Kill the run with every thread's traceback if one test hangs, rather than stall CI."""
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
