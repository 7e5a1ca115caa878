"""The exercises in a browser tab (shared/tools/browser/), tested as a student uses them.

The site is built once (Pyodide and pytest's wheels come from out/browser-cache/, fetched
the first time), served on a loopback address, and opened in Debian's headless Chromium at
a projector's 1280x720.  For every exercise the tab lists as runnable, the fresh files, the
reference and a wrong answer of the catalogue give in the tab the task lines the command
line gives for the same code, in English and in Chinese; the tab's zip passes `check`; the
work stays across a reload and the checks go on with the server gone; every text is 18 px
or more.
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.tools.bench import browsertab
from shared.tools.browser import build, drive, tab
from shared.tools.browser.drive import wait
from shared.tools.exercises import answers, catalog, checking
from shared.tools.exercises.bodies import put_bodies
from shared.tools.exercises.cli import main
from shared.tools.exercises.inprocess import pytest_in_process
from tests.test_show import need_browser

ROOT = Path(__file__).resolve().parent.parent
RUNNABLE = [e.name for e in catalog.all_exercises() if not tab.why_not(e, "en")]
#: A task's line and the total, in either language: what the tab and the terminal must share.
VERDICT = re.compile(
    r"^(task \d+: .*|任务 \d+：.*|[\w-]+: \d+ of \d+ tasks passed.*|[\w-]+：\d+ 个任务.*)$"
)


def verdict_lines(output: str) -> list[str]:
    """The lines of a check's output that judge: each task's, and the total."""
    return [line for line in output.splitlines() if VERDICT.match(line)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site's folder."""
    need_browser()
    return build.build(tmp_path_factory.mktemp("site") / "browser")


@pytest.fixture(scope="module")
def page(site: Path) -> Iterator[Any]:
    """The site open in a headless Chromium at 1280x720, its Python ready."""
    with drive.opened(site) as (driver, _):
        yield driver


def language(driver: Any, lang: str) -> None:
    """Choose the page's language as its toggle would be left."""
    driver.execute_script("localStorage.setItem('crawler500.lang', arguments[0])", lang)
    if driver.execute_script("return document.documentElement.lang") != lang:
        drive.reload(driver)


def tab_check(driver: Any, name: str, files: dict[str, str]) -> str:
    """Put the files in the tab's editors, press Check, and return what #output shows."""
    drive.show(driver, name)
    return drive.check(driver, files).output


def cli_check(
    name: str, files: dict[str, str], lang: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    """`check` on the command line (its pytest in this process) for the same files."""
    assert main(["start", name, "--into", str(folder), "--lang", lang]) == 0
    for path, text in files.items():
        (folder / path).write_text(text, encoding="utf-8")
    return run_check(name, folder, lang, monkeypatch)


def run_check(name: str, folder: Path, lang: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """`check --in folder`, its output."""
    monkeypatch.setattr(checking, "_run", pytest_in_process)
    capture = io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", capture)
        main(["check", name, "--in", str(folder), "--lang", lang])
    return capture.getvalue()


def versions(name: str) -> dict[str, dict[str, str]]:
    """The exercise's files fresh (emptied), solved (the reference) and with a wrong answer."""
    exercise = catalog.find(name)
    assert exercise is not None
    paths = tab.edited_files(exercise)
    solved = {path: (ROOT / path).read_text(encoding="utf-8") for path in paths}
    fresh = json.loads(tab_open(name))["files"]
    mistake = answers.load(exercise).mistakes[0]
    wrong = dict(solved)
    target = mistake.edit.target
    body = answers.load(exercise).wrong_body(mistake)
    wrong[target.path] = put_bodies(solved[target.path], {target.qualname: body})
    return {"fresh": fresh, "solved": solved, "wrong": wrong}


def tab_open(name: str) -> str:
    """tab.open run here, in a folder of this test session (tab.WORKSPACES is Pyodide's)."""
    return tab.open(name, "en", "")


@pytest.fixture(autouse=True)
def workspaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tab.py's workspaces, when run here, go to the test's folder, not to /workspaces."""
    monkeypatch.setattr(tab, "WORKSPACES", tmp_path / "workspaces")


@pytest.mark.slow
# s2-timeout's wrong answer leaves three tests to wait out their 20 s limit, in the tab and
# on the command line: the limit is part of what must read the same.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("name", RUNNABLE)
def test_the_tab_judges_as_the_command_line_does(
    page: Any, name: str, lang: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    language(page, lang)
    for kind, files in versions(name).items():
        shown = verdict_lines(tab_check(page, name, files))
        said = verdict_lines(cli_check(name, files, lang, tmp_path / kind, monkeypatch))
        assert shown and shown == said, f"{name} {kind} ({lang}): the tab {shown}, `check` {said}"
        passed = [line for line in said if re.match(r"^(task \d+: passed|任务 \d+：通过)", line)]
        tasks = [line for line in said if re.match(r"^(task|任务) \d+", line)]
        expected = {"fresh": 0, "solved": len(tasks), "wrong": None}[kind]
        assert expected is None or len(passed) == expected, f"{name} {kind}: {said}"
        assert kind != "wrong" or len(passed) < len(tasks), f"{name}: a wrong answer passed"


def test_the_tab_s_zip_passes_check_and_work_survives_a_reload(
    page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    language(page, "en")
    solved = versions("s2-future")["solved"]
    tab_check(page, "s2-future", solved)
    page.execute_script("window.__zip = null")
    # The Export button's zip, read as the download it is.
    page.execute_script(
        """const original = URL.createObjectURL;
           URL.createObjectURL = (blob) => {
             blob.arrayBuffer().then((b) => {
               let s = ''; for (const x of new Uint8Array(b)) s += String.fromCharCode(x);
               window.__zip = btoa(s);
             });
             return original(blob);
           };"""
    )
    page.find_element("id", "export").click()
    data = base64.b64decode(wait(page, "return window.__zip"))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)
    [folder] = [path for path in tmp_path.iterdir() if path.is_dir() and path.name != "workspaces"]
    lines = verdict_lines(run_check("s2-future", folder, "en", monkeypatch))
    assert lines and all("FAILED" not in line for line in lines), lines
    # The files stay in the browser: after a reload the editor holds them still.
    drive.reload(page)
    drive.show(page, "s2-future")
    editor = page.find_element("css selector", 'textarea[data-path="stage2_generators/futures.py"]')
    kept = editor.get_property("value")
    assert kept == solved["stage2_generators/futures.py"], "the work was not kept across a reload"


def test_every_exercise_is_listed_and_those_that_cannot_run_say_why(page: Any) -> None:
    language(page, "en")
    page.execute_script("location.hash = '#'")
    wait(page, "return document.querySelectorAll('li[data-name]').length")
    for exercise in catalog.all_exercises():
        item = page.find_element("css selector", f'li[data-name="{exercise.name}"]')
        reason = tab.why_not(exercise, "en")
        assert reason in item.text, f"{exercise.name}: not said why it cannot run: {item.text}"


@pytest.mark.parametrize("view", ["#", "#s2-future"])
def test_every_text_reads_at_18_px_or_more_on_a_projector(page: Any, view: str) -> None:
    for lang in ("en", "zh-CN"):
        language(page, lang)
        page.execute_script("location.hash = arguments[0]", view)
        time.sleep(0.5)
        small = page.execute_script(
            """const small = [];
               for (const el of document.querySelectorAll('body *')) {
                 const own = [...el.childNodes].some(
                   (n) => n.nodeType === 3 && n.textContent.trim());
                 const box = el.getBoundingClientRect();
                 if (!own || box.width === 0 || box.height === 0) continue;
                 const size = parseFloat(getComputedStyle(el).fontSize);
                 if (size < 18) small.push(`${el.tagName}#${el.id}: ${size}px`);
               }
               return small;"""
        )
        assert not small, f"{view} ({lang}) has text under 18 px: {small[:5]}"


def test_checks_go_on_with_the_server_gone(site: Path) -> None:
    """After the first load everything is in the tab: the class network may drop, and the
    next visit finds the site in the browser (where it is secure: localhost here)."""
    with drive.opened(site) as (driver, server):
        drive.show(driver, "s2-future")
        wait(driver, "return navigator.serviceWorker.controller !== null")  # the site is kept
        server.stop()
        files = versions("s2-future")["solved"]
        lines = verdict_lines(tab_check(driver, "s2-future", files))
        # And the next visit, the server still gone (sw.js serves the site).
        drive.reload(driver)
        again = verdict_lines(tab_check(driver, "s2-future", files))
    assert lines and all("FAILED" not in line for line in lines), lines
    assert again == lines, f"after a reload without the server: {again}"


def test_a_check_that_overflows_the_browser_s_stack_says_so_and_python_starts_again(
    page: Any,
) -> None:
    """A browser gives Python a smaller stack than a terminal: freeing a chain of 20,000
    objects that hold each other overflows it (a terminal's Python frees it unharmed), and
    Pyodide stops.  The tab says so, with no verdict, and the next check runs on a fresh
    Python."""
    language(page, "en")
    solved = versions("s2-future")["solved"]
    path = "stage2_generators/futures.py"
    first = "        if self.done():\n            raise InvalidStateError"  # _finish's start
    chain = "        chain = None\n        for _ in range(20000):\n"
    chain += "            chain = [chain].copy\n"
    deep = solved[path].replace(first, chain + "        del chain\n" + first, 1)
    assert deep != solved[path]
    said = json.loads((ROOT / "shared/tools/browser/site/texts.json").read_text("utf-8"))
    output = tab_check(page, "s2-future", {path: deep})
    assert said["en"]["fatal_check"] in output, output
    wait(page, drive.READY, drive.LOAD_S)
    lines = verdict_lines(tab_check(page, "s2-future", solved))
    assert lines and all("FAILED" not in line for line in lines), lines


@pytest.mark.slow
@pytest.mark.timeout(240)  # a new Chromium, a first visit and a reload, two checks
def test_the_benchmark_measures_the_tab_s_size_load_and_check(site: Path) -> None:
    """S4 of the benchmark, one run on the built site: figures that can be true."""
    part = browsertab.measure(1, site)
    assert "skipped" not in part, part["skipped"]
    size = part["site"]["bytes"]
    assert size > 1e6 and part["site"]["files"] > 10
    # Each file once, but the page (as / and as index.html) and site.json, which sw.js
    # asks for again: more would be a first visit fetching the site twice.
    again = (site / "index.html").stat().st_size + (site / "site.json").stat().st_size
    assert 0 < part["first_bytes"]["median"] <= size + again
    assert part["reload_bytes"]["median"] < 1e6, "a reload fetched Pyodide again"
    for name in ("ready_cold_s", "ready_warm_s", "check_cold_s", "check_warm_s"):
        assert part[name]["median"] > 0, name
    assert part["check_warm_s"]["median"] < 90  # the page's own limit of a check
