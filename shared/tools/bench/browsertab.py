"""S4, the browser tab: what the exercises' site (shared/tools/browser/) costs a class.

A teacher who serves ``out/browser/`` to a room wants to know how much each laptop
fetches, how long a student waits before the tab can check, and how long a check takes.
Each run opens the site in a new headless Chromium with a fresh profile, so nothing is
cached, and measures:

* the first visit: the seconds from asking for the page to a Python that can check
  (Pyodide started, pytest's wheels and the repository unpacked), and the files and
  bytes the server sent until then, counted by the server itself;
* a reload in the same browser: the same seconds, now that the browser keeps the site
  (its service worker, site/sw.js: the server on 127.0.0.1 counts as secure), and the
  bytes the server sent for it;
* a check of s2-future's fresh files, as a student's first press of Check finds them: the
  first one (pytest imported, the tests collected for the first time in that Python)
  and the next one, of the same files.

The times are the page's own clock (shared/tools/browser/drive.py says how), so the
driver's polling is not in them.  The site is built into a temporary folder, offline
from out/browser-cache/ once ``nox -s browser`` has filled it, so that a site being
served from out/browser/ is left alone.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shared.tools.bench.bench import summary
from shared.tools.browser import build, drive
from shared.tools.show import browser

#: The exercise whose check is timed: the first of those that run in the tab.
EXERCISE = "s2-future"


@dataclass(frozen=True)
class TabRun:
    """One run's figures: a fresh browser's first visit, a reload, and two checks."""

    #: The files and bytes the server sent from the first request until Python was ready.
    first_files: int
    first_bytes: int
    #: Seconds from asking for the page to Python ready: first visit, then a reload.
    ready_cold_s: float
    ready_warm_s: float
    #: The bytes the server sent for the reload (the browser kept the rest).
    reload_bytes: int
    #: Seconds from the click on Check to its report: the first check, then the next.
    check_cold_s: float
    check_warm_s: float


def site_size(folder: Path) -> tuple[int, int]:
    """The built site's files and bytes, every file counted once."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    return len(files), sum(path.stat().st_size for path in files)


def one_run(folder: Path) -> tuple[TabRun, str]:
    """Measure the site in a new headless Chromium; the figures and the browser's version.

    Raises RuntimeError when a check gives no report (the page said it could not check).
    """
    with drive.served(folder) as server, drive.chromium() as driver:
        ready_cold = drive.load(driver, server.url + "#")
        first_files, first_bytes = server.files_sent, server.bytes_sent
        # The reload is warm only once the service worker holds the site: it fetches
        # every file at the first visit, beside the page's own requests.
        drive.wait(driver, "return navigator.serviceWorker.controller !== null")
        before = server.bytes_sent
        ready_warm = drive.reload(driver)
        reload_bytes = server.bytes_sent - before
        # Checked after the reload, in that page's new Python: pytest is not imported yet.
        drive.show(driver, EXERCISE)
        cold, warm = drive.check(driver), drive.check(driver)
        for checked in (cold, warm):
            if checked.kind != "result":
                raise RuntimeError(f"{EXERCISE}'s check gave no report: {checked.output[-500:]}")
        run = TabRun(
            first_files=first_files,
            first_bytes=first_bytes,
            ready_cold_s=round(ready_cold, 3),
            ready_warm_s=round(ready_warm, 3),
            reload_bytes=reload_bytes,
            check_cold_s=round(cold.seconds, 3),
            check_warm_s=round(warm.seconds, 3),
        )
        return run, drive.version(driver)


def summarized(values: Sequence[float]) -> dict[str, Any]:
    """A figure's values over the runs, with their median, minimum and maximum."""
    return {"values": list(values), **summary(values)}


def measure(
    runs: int,
    folder: Path | None = None,
    progress: Callable[[int, TabRun], None] = lambda number, run: None,
) -> dict[str, Any]:
    """S4's results document: ``runs`` runs, each in a new Chromium, on the built site.

    Without ``folder`` the site is built first, into a temporary folder.  Where there is
    no Chromium, or the site cannot be built, or a run fails, S4 is ``{"skipped": why}``.
    ``progress`` is told each run's figures as it ends (its number counts from 1).
    """
    reason = browser.missing()
    if reason:
        return {"skipped": reason}
    if folder is None:
        with tempfile.TemporaryDirectory(prefix="crawler500-tab-") as scratch:
            try:
                built = build.build(Path(scratch) / "browser")
            except (build.BuildError, subprocess.CalledProcessError, OSError) as error:
                return {"skipped": f"the site could not be built ({error})"}
            return measure(runs, built, progress)
    found: list[TabRun] = []
    version = "?"
    for number in range(1, runs + 1):
        try:
            run, version = one_run(folder)
        except Exception as error:  # selenium's errors, a timeout, a check with no report
            return {"skipped": f"run {number} failed: {type(error).__name__}: {error}"}
        found.append(run)
        progress(number, run)
    files, size = site_size(folder)
    width, height = browser.PROJECTOR
    figures = {name: [getattr(run, name) for run in found] for name in asdict(found[0])}
    return {
        "runs": runs,
        "browser": {"name": "Chromium", "version": version, "headless": True},
        "window": [width, height],
        "exercise": EXERCISE,
        "site": {"files": files, "bytes": size},
        **{name: summarized(values) for name, values in figures.items()},
    }
