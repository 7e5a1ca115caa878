"""The lesson, clean: what a stage's process loads.

Stages 1 and 2 build their own event loop to show what asyncio does; the point is lost if
asyncio is in the process all the same.  So a crawl of each runs here as a real program,
and what it imported is read from its ``sys.modules`` at exit.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from shared import STAGES
from shared.testsite import Site, serve
from shared.tools.sidebyside import compare, find

ROOT = Path(__file__).resolve().parent.parent

#: Run as ``python -S -c REPORT OUT STAGE ARG...``: the stage's own ``python -m STAGE``,
#: then, at exit, which of asyncio, threading and concurrent.futures (the modules a
#: hand-made loop must do without) were loaded, how many threads run, and whether the
#: standard library's ``logging`` (which imports threading) was.
REPORT = """
import atexit, json, runpy, sys
out, stage = sys.argv[1], sys.argv[2]

def report() -> None:
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in FORBIDDEN)
    threading = sys.modules.get("threading")
    threads = threading.active_count() if threading else 1
    with open(out, "w") as file:
        json.dump({"loaded": loaded, "threads": threads, "logging": "logging" in sys.modules}, file)

FORBIDDEN = {"asyncio", "threading", "concurrent"}
atexit.register(report)
sys.argv = [stage, *sys.argv[3:]]
runpy.run_module(stage, run_name="__main__", alter_sys=True)
"""


def run_isolated(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python code in a child without ``site``, so no ``.pth`` file loads anything first.

    Some installations run code at start-up from ``.pth`` files (one imports certifi, which
    imports threading); that is the machine's doing, not the stage's.  ``-S`` leaves them
    out, and the checkout and the site-packages go on the path by hand.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *site.getsitepackages()])}
    argv = [sys.executable, "-S", "-c", code, *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)


def loaded_by(code: str, tmp_path: Path, *args: str) -> dict[str, object]:
    """What the REPORT program wrote at exit."""
    out = tmp_path / "loaded.json"
    done = run_isolated(code, str(out), *args)
    assert out.exists(), done.stderr
    result: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    return result


@pytest.mark.parametrize("package", [STAGES["stage1"], STAGES["stage2"]])
def test_a_hand_made_loop_crawls_without_asyncio_or_threads(package: str, tmp_path: Path) -> None:
    """A crawl by stage 1 or 2, its instruments on, loads neither asyncio nor threading.

    The instruments are --trace, --timeline and --trace-events, and -vv, which logs all
    and makes a first Ctrl-C print every task's wait (shared/tools/instruments/tasktree.py).
    The crawler
    writes its messages with shared/log.py: the standard library's ``logging`` would
    import ``threading``.
    """
    site_ = Site(pages=5, traps=False)
    with serve(site_) as base_url:  # served by this process: the child only crawls
        json_out = tmp_path / "crawl.json"
        args = [base_url, "-vv", "--trace", "--timeline", "--json", str(json_out)]
        args += ["--trace-events", str(tmp_path / "trace.json")]
        report = loaded_by(REPORT, tmp_path, package, *args)
    doc = json.loads(json_out.read_text(encoding="utf-8"))
    assert len(doc["fetches"]) == len(site_.expected(base_url)) and doc["timeline"]
    assert report == {"loaded": [], "threads": 1, "logging": False}


def test_stage3_does_load_asyncio(tmp_path: Path) -> None:
    """The check is not vacuous: stage 3, on asyncio, is seen loading it."""
    site_ = Site(pages=3, traps=False)
    with serve(site_) as base_url:
        report = loaded_by(REPORT, tmp_path, STAGES["stage3"], base_url, "-q")
    assert "asyncio" in report["loaded"] and "concurrent.futures" in report["loaded"]


def test_stages_2_and_3_have_the_same_pieces() -> None:
    """Every function of stage 2's crawler has its twin in stage 3's: the diff is the lesson.

    Nothing is left on one side only, as a helper that exists for a tool would be.
    """
    compared = compare(find("stage2"), find("stage3"))
    alone = [s.left or s.right for s in compared.sections if not (s.left and s.right)]
    assert not alone, [piece.name for side in alone for piece in side]
