"""A check's pytest run in this process, where no subprocess can be started or is wanted.

`check` runs pytest in a subprocess (checking._run).  Two places run it here instead,
with ``checking._run = pytest_in_process``: the suite, which checks hundreds of wrong
answers and saves a Python's start and every import each time (tests/
test_exercise_answers.py), and the browser build, where Pyodide has no subprocess at all
(shared/tools/browser/tab.py).  For the length of the run this process is made to look
like the one `check` would start: its folder, path, environment and modules.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared.tools.exercises import checking, runner
from shared.tools.exercises.catalog import ROOT


def imported_here(name: str, module: ModuleType, folders: tuple[str, ...]) -> bool:
    """Whether a module is one a check must import afresh: the crawlers' and shared/
    (``checking.PACKAGES``), or one from ``folders`` (test modules, their conftest.py)."""
    file = getattr(module, "__file__", None) or ""
    return name.partition(".")[0] in checking.PACKAGES or file.startswith(folders)


@contextlib.contextmanager
def as_a_new_process(cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """Make this process look, for a while, like the one `check` would start in ``cwd``.

    Its working directory and the first entry of its path are ``cwd`` (no entry points
    into the repository), its environment is ``env``, and none of the crawlers' modules
    nor the suite's test modules are imported yet: `import stage1_callbacks` finds the
    workspace's copy.  Should one slip through, the plugin's proof of where the modules
    came from (tests/exercises/conftest.py) stops the run.  Afterwards all is put back.
    The objects already here are frozen meanwhile: the stage 2 tests' gc.collect()
    (tests/exercises/stage2_loop.py) then walks the check's objects, not the suite's.
    """
    # The check's scratch folder: its tree (the tests' copy) beside its empty working folder.
    folders = tuple(f"{folder}{os.sep}" for folder in (ROOT / "tests", cwd.parent))
    kept = {name: m for name, m in sys.modules.items() if imported_here(name, m, folders)}
    environ, path, here = dict(os.environ), list(sys.path), os.getcwd()
    bytecode = sys.dont_write_bytecode
    for name in kept:
        del sys.modules[name]
    os.environ.clear()
    os.environ.update(env)
    # The checkout's folders go, but not the environment's own, which nox keeps inside the
    # checkout (.nox/): a check imports its packages (trustme, say) as the subprocess would.
    prefix = Path(sys.prefix).resolve()
    repository = [
        p
        for p in path
        if p in ("", ".")
        or (Path(p).resolve().is_relative_to(ROOT) and not Path(p).resolve().is_relative_to(prefix))
    ]
    sys.path[:] = [str(cwd), *(p for p in path if p not in repository)]
    sys.dont_write_bytecode = True  # as PYTHONDONTWRITEBYTECODE does for the subprocess
    os.chdir(cwd)
    importlib.invalidate_caches()
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path
        sys.dont_write_bytecode = bytecode
        for name in [n for n, m in sys.modules.items() if imported_here(n, m, folders)]:
            del sys.modules[name]
        sys.modules.update(kept)


def pytest_in_process(
    argv: list[str], cwd: Path, env: dict[str, str], limit: float, order: dict[str, Any]
) -> tuple[str | None, str, str]:
    """What `check` runs, the runner in ``cwd``, run by pytest.main in this process.

    In the place of checking._run, whose arguments it takes and whose answer it gives:
    why the run was stopped (never, here), the signed records, and pytest's output.  The
    records are signed with the order's secret, as the runner signs them.  Each test's
    time limit holds here as in a subprocess (tests/exercises/conftest.py: SIGALRM, in
    this thread); ``limit``, the whole check's, is a kill from outside, which only a
    subprocess has.
    """
    output, records = io.StringIO(), io.StringIO()
    secret = bytes.fromhex(order["secret"])

    def record(entry: dict[str, Any]) -> None:
        records.write(runner.signed(secret, entry))

    with (
        as_a_new_process(cwd, env),
        contextlib.redirect_stdout(output),
        contextlib.redirect_stderr(output),
    ):
        sys.path[:0] = order["path"]
        pytest.main(order["argv"], plugins=[runner.Results(record)])
    return None, records.getvalue(), output.getvalue()
