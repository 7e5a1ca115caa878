"""nox -s show: the recorder's data is sound, and the page shows it, step by step, in a browser.

In English and in Chinese: every text the page shows a reader comes from one table per
language, and the page in Chinese shows none of the English one.

And projector mode, measured on a 1280x720 screen: the show page in large type (#big), the
diff page (nox -s diff -- --html) and the compare pictures, their sizes read from the DOM.

The browser tests drive Debian's headless Chromium with Selenium.  Where it is not
installed they are skipped, unless CRAWLER500_REQUIRE_BROWSER=1 (CI sets it): then a
missing browser fails them, so that CI proves the page.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared.crawling import Options
from shared.testsite import Site, serve
from shared.tools.language import locale_language
from shared.tools.show import browser
from shared.tools.show.command import (
    build_parser,
    crawl_arguments,
    main,
    merged_position,
    picture_facts,
)
from shared.tools.show.page import LANGUAGES, crawl_data, interesting_step, texts, waits, write
from shared.tools.show.record import KINDS, Recorder, recording

# A --trace line, as tests/test_trace.py reads it.
LINE = re.compile(r"^ *\d+\.\d{4}  (?P<who>\S.{15}) (?P<what>.+?) +(?P<url>http\S+|-)$")
# Where each stage's code can be when a step runs it: a callback's first line (stage 1),
# a generator paused at a `yield` or not yet started (2), a coroutine at an await (3).
PAUSE_POINTS = {
    "stage1_callbacks": ("def ",),
    "stage2_generators": ("yield", "def "),
    "stage3_asyncio": ("await", "async "),
}


def record(stage: ModuleType, echo: io.StringIO | None = None) -> tuple[Recorder, int]:
    """Record a crawl of a 6-page site with two tasks; return the recorder and the pages."""
    with (
        serve(Site(6, traps=False, latency=0.02)) as base_url,
        recording(stage.__name__, echo) as recorder,
    ):
        result = stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
    assert recorder.errors == []
    return recorder, len(result.fetches)


def test_steps_are_in_time_order_and_each_has_an_actor(stage: ModuleType) -> None:
    recorder, pages = record(stage)
    data = crawl_data(recorder)
    steps = data["steps"]
    assert pages == 6
    assert len(steps["t"]) >= 12  # at least two steps a page
    assert steps["t"] == sorted(steps["t"])
    assert steps["t"][0] >= 0
    assert all(0 <= actor < len(data["actors"]) for actor in steps["a"])
    # Every actor that ran has a lane, and no two actors alive at once share one.
    lanes: dict[int, list[tuple[int, int]]] = {}
    for actor in set(steps["a"]):
        mine = [i for i, a in enumerate(steps["a"]) if a == actor]
        row = data["actors"][actor][2]
        assert row >= 0
        for first, last in lanes.get(row, []):
            assert last < mine[0] or mine[-1] < first, "two actors overlap in one lane"
        lanes.setdefault(row, []).append((mine[0], mine[-1]))


def test_waits_begin_before_they_end_and_join_an_actor_s_steps(stage: ModuleType) -> None:
    recorder, _ = record(stage)
    data = crawl_data(recorder)
    steps, flat = data["steps"], data["waits"]
    waits = [flat[i : i + 5] for i in range(0, len(flat), 5)]
    assert waits
    for actor, begin, end, _kind, label in waits:
        assert begin < end
        assert steps["t"][begin] <= steps["t"][end]
        assert steps["a"][begin] == actor == steps["a"][end]
        assert actor not in steps["a"][begin + 1 : end], "a wait spans a step of its actor"
        assert data["strings"][label]
    # Between two steps of an actor it waited: every pair of its steps has its wait.
    pairs = sum(len([a for a in steps["a"] if a == actor]) - 1 for actor in set(steps["a"]))
    assert len(waits) == pairs


def test_the_line_of_each_frame_is_where_the_stage_runs_or_paused(stage: ModuleType) -> None:
    recorder, _ = record(stage)
    data = crawl_data(recorder)
    files = [text.splitlines() for _, text in data["files"]]
    assert [path.split("/")[0] for path, _ in data["files"]] == [stage.__name__] * len(files)
    shown = 0
    for chain in data["chains"]:
        for _name, file, line, end in chain:
            if file < 0:
                continue
            text = files[file][line - 1]
            assert any(word in text for word in PAUSE_POINTS[stage.__name__]), (line, text)
            assert line <= end <= len(files[file])
            shown += 1
    assert shown


def test_the_recorder_keeps_the_trace_format(stage: ModuleType) -> None:
    """Its data and its --trace lines are two views of one set of steps."""
    echo = io.StringIO()
    recorder, _ = record(stage, echo)
    header, *lines = echo.getvalue().splitlines()
    assert header.startswith(" seconds  ") and header.endswith(" url"), header
    assert all(LINE.match(line) for line in lines), lines
    assert len(lines) == len(recorder.steps)
    whats = [match["what"] for line in lines if (match := LINE.match(line))]
    assert whats == [step.what for step in recorder.steps]


def test_stage2_waits_name_sockets_queue_and_tasks() -> None:
    import stage2_generators

    recorder, _ = record(stage2_generators)
    labels = {wait.label for wait in waits(recorder)}
    assert any(re.fullmatch(r"fd \d+ readable", label) for label in labels), labels
    assert any(re.fullmatch(r"fd \d+ writable", label) for label in labels), labels
    assert "the queue: get" in labels
    assert any(re.fullmatch(r"task worker-\d", label) for label in labels), labels
    chains = {tuple(name for name, *_ in step.frames) for step in recorder.steps}
    # A worker runs its request itself: one chain from work down to the socket's wait.
    assert ("work", "fetch", "request", "sock_recv", "_when_ready") in chains


def test_stage1_sockets_belong_to_the_fetchers_waiting_on_them() -> None:
    import stage1_callbacks

    recorder, _ = record(stage1_callbacks)
    owned = 0
    for state in recorder.states:
        waiting = {label.split(" -> ")[0]: actor for actor, _, label in state.waits}
        for fd, mode, actor, _ in state.sockets:
            if actor >= 0:
                event = "readable" if mode == "r" else "writable"
                assert waiting[f"fd {fd} {event}"] == actor
                owned += 1
    assert owned


def test_the_defaults_are_a_tiny_site_and_full_site_drops_them() -> None:
    own = build_parser().parse_args(["stage2"])
    assert crawl_arguments(own, ["--max-tasks", "3"])[-2:] == ["--max-tasks", "3"]
    assert "--site-pages" in crawl_arguments(own, [])
    own.full_site, own.obey_robots = True, True
    assert crawl_arguments(own, []) == ["--max-tasks", "2", "--site-latency", "0.1"]


def test_a_root_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["stage2", "http://example.org/", "--no-open"])
    assert exit.value.code == 2
    assert "built-in test site only" in capsys.readouterr().err


# ---- the page's texts, one table per language ------------------------------------------

PLACEHOLDER = re.compile(r"\{(\w+)\}")
SHOW = Path(__file__).resolve().parents[1] / "shared" / "tools" / "show"


def test_every_text_is_in_both_languages_with_the_same_blanks() -> None:
    table = texts()
    assert list(table) == list(LANGUAGES)
    english, chinese = table["en"], table["zh-CN"]
    assert english.keys() - chinese.keys() == set(), "keys only in English"
    assert chinese.keys() - english.keys() == set(), "keys only in Chinese"
    for key, text in english.items():
        assert text.strip() and chinese[key].strip(), key
        # The names a text is filled in with: the page fills in the same in both.
        blanks = set(PLACEHOLDER.findall(text))
        assert blanks == set(PLACEHOLDER.findall(chinese[key])), key


def test_every_key_the_page_names_is_in_the_table() -> None:
    """The keys in page.html and page.js, and those they build (a stage's title, a kind)."""
    html = (SHOW / "page.html").read_text(encoding="utf-8")
    script = (SHOW / "page.js").read_text(encoding="utf-8")
    named = set(re.findall(r'data-t(?:-title|-label)?="([^"]+)"', html))
    named |= set(re.findall(r'"([a-z][a-z-]*\.[a-z0-9_-]*)"', script))  # "step.of", "kind."
    # A key that ends in a dot is the start of keys the page builds.
    built = {
        "title.": ["stage1_callbacks", "stage2_generators", "stage3_asyncio"],
        "kind.": KINDS,
        "mode.": ["r", "w", "rw"],
        "facts.": ["actor", "what", "why", "url", "chain"],
        "wait.": [],  # the page takes all the table's "wait." keys, whichever they are
        "tree.": [],  # and its "tree." keys
    }
    assert {key for key in named if key.endswith(".")} == built.keys()
    named = {key for key in named if not key.endswith(".")}
    # The sentences that say why a step ran: page.py names their keys.
    named |= set(re.findall(r'"(why\.[a-z-]+)"', (SHOW / "page.py").read_text(encoding="utf-8")))
    named |= {start + end for start, ends in built.items() for end in ends}
    assert len(named) > 40
    assert named - texts()["en"].keys() == set()


def test_a_chinese_locale_chooses_chinese_and_the_first_set_variable_decides() -> None:
    assert locale_language({"LANG": "zh_CN.UTF-8"}) == "zh-CN"
    assert locale_language({"LC_MESSAGES": "zh_TW.UTF-8", "LANG": "en_US.UTF-8"}) == "zh-CN"
    assert locale_language({"LC_ALL": "C.UTF-8", "LANG": "zh_CN.UTF-8"}) is None
    assert locale_language({"LC_ALL": "", "LANG": "zh_SG"}) == "zh-CN"  # empty: not set
    assert locale_language({"LANG": "en_GB.UTF-8"}) is None  # the browser decides
    assert locale_language({}) is None


def embedded(page: Path) -> dict[str, Any]:
    """The data a page carries, read from its file."""
    found = re.search(r'id="show-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S)
    assert found
    data: dict[str, Any] = json.loads(found[1])
    return data


def test_the_command_writes_the_language_asked_or_the_locale_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page, and what the command says on the terminal: its lines and its --help."""
    page = tmp_path / "page.html"
    argv = ["stage2", "--out", str(page), "--no-open", "--site-pages", "2", "-q"]
    for name in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(argv) == 0
    assert embedded(page)["lang"] == "zh-CN"
    said = capsys.readouterr().err
    assert "阶段 2：生成器：2 个 URL，" in said and f"已写出 {page}" in said, said
    assert main([*argv, "--lang", "en"]) == 0
    assert embedded(page)["lang"] == "en"
    said = capsys.readouterr().err
    assert "stage 2: generators: 2 URLs, " in said and f"wrote {page}" in said, said
    ours, theirs = build_parser("zh-CN"), build_parser()
    untranslated = [
        a.option_strings or a.dest
        for a, their in zip(ours._actions, theirs._actions, strict=True)
        if not (a.help and re.search("[\u4e00-\u9fff]", a.help) and a.help != their.help)
    ]
    assert not untranslated, f"help still in English: {untranslated}"
    assert ours.format_help().startswith("用法：") and "\n选项：\n" in ours.format_help()
    monkeypatch.setenv("LANG", "C.UTF-8")
    assert main(argv) == 0
    assert embedded(page)["lang"] is None  # the page follows the reader's browser
    assert embedded(page)["texts"] == texts()


# ---- the page, in a browser ---------------------------------------------------------


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The page for stage 2 and for all three stages, of a quick 6-page crawl."""
    folder = tmp_path_factory.mktemp("show")
    made = {}
    for which in ("stage2", "all"):
        made[which] = folder / f"{which}.html"
        argv = [which, "--out", str(made[which]), "--no-open", "--site-latency", "0.02", "-q"]
        argv += ["--lang", "en"]  # in English wherever the tests run: they read its texts
        assert main(argv) == 0
    return made


def need_browser() -> None:
    """Skip a test that needs Chromium where there is none, unless CI requires it: then fail."""
    reason = browser.missing()
    if reason:
        if os.environ.get("CRAWLER500_REQUIRE_BROWSER") == "1":
            pytest.fail(f"CRAWLER500_REQUIRE_BROWSER=1, but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """A headless Chromium, shared by this module's browser tests."""
    need_browser()
    with browser.headless_chromium() as chromium:
        yield chromium


def open_page(driver: Any, page: Path, fragment: str = "") -> dict[str, Any]:
    """Open a page from disk, wait until it is drawn, and return its embedded data."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")  # a page loaded afresh: not the last one, its hash changed
    driver.get(page.resolve().as_uri() + fragment)
    WebDriverWait(driver, 10).until(
        lambda d: d.execute_script("return document.body.dataset.ready")
    )
    data: dict[str, Any] = driver.execute_script(
        "return JSON.parse(document.getElementById('show-data').textContent)"
    )
    return data


def merged(data: dict[str, Any]) -> list[tuple[int, int]]:
    """Every (crawl, step) in time order, a tie going to the crawl listed first."""
    entries = [
        (t, c, i)
        for c, crawl in enumerate(data["crawls"])
        for i, t in enumerate(crawl["steps"]["t"])
    ]
    return [(c, i) for _, c, i in sorted(entries)]


def expected_panel(crawl: dict[str, Any], i: int) -> dict[str, Any]:
    """What a crawl's panel must show at its step i, from the recorded data alone."""
    text, steps = crawl["strings"], crawl["steps"]
    chain = crawl["chains"][steps["fr"][i]]
    own = [frame for frame in chain if frame[1] >= 0]
    sockets, waits = crawl["states"][steps["st"][i]]

    def name(actor: int) -> str:
        return " ".join(
            filter(None, (text[crawl["actors"][actor][0]], text[crawl["actors"][actor][1]]))
        )

    return {
        "step": f"step {i + 1} of {len(steps['t'])}",
        "file": crawl["files"][own[-1][1]][0] if own else "",
        "line": str(own[-1][2]) if own else None,
        "ready": str(steps["ready"][i]),
        "timers": str(steps["timers"][i]),
        "sockets": [[str(fd), text[label]] for fd, _, _, label in sockets],
        "waiting": [[name(actor), text[label]] for actor, _, label in waits],
    }


def shown_panel(driver: Any, index: int) -> dict[str, Any]:
    """What the page's panel for crawl ``index`` shows now."""
    shown: dict[str, Any] = driver.execute_script(
        """
        const panel = document.querySelector(`.panel[data-crawl="${arguments[0]}"]`);
        const text = (selector) => panel.querySelector(selector).textContent;
        const rows = (selector) => [...panel.querySelectorAll(selector + " tbody tr")]
          .map((tr) => [...tr.children].map((td) => td.textContent));
        const current = panel.querySelectorAll(".code .current");
        return {
          step: text(".step-no"), file: text(".file"),
          line: current.length === 1 ? current[0].dataset.line : null,
          ready: text(".counts .ready"), timers: text(".counts .timers"),
          sockets: rows(".sockets").map((r) => [r[0], r[3]]),
          waiting: rows(".waiting"),
        };
        """,
        index,
    )
    return shown


def press(driver: Any, key: str, times: int = 1) -> None:
    """Press a key on the page (not in a form field), as a reader would."""
    from selenium.webdriver.common.action_chains import ActionChains

    actions = ActionChains(driver)
    for _ in range(times):
        actions.send_keys(key)
    actions.perform()


def cursor(driver: Any) -> int:
    """The page's step number (1-based, over all crawls), from the control bar."""
    found = re.fullmatch(r"step (\d+) of \d+", driver.find_element("id", "step-no").text)
    assert found, driver.find_element("id", "step-no").text
    return int(found[1])


def test_stepping_shows_the_recorded_step_line_and_loop_state(
    driver: Any, pages: dict[str, Path]
) -> None:
    from selenium.webdriver.common.keys import Keys

    data = open_page(driver, pages["stage2"], "#step=1")
    crawl = data["crawls"][0]
    total = len(crawl["steps"]["t"])
    assert cursor(driver) == 1
    visited = []
    for key, times in [
        (Keys.ARROW_RIGHT, 1), (Keys.ARROW_RIGHT, 6), (Keys.ARROW_LEFT, 2),
        (Keys.END, 1), (Keys.ARROW_LEFT, 3), (Keys.HOME, 1), (Keys.ARROW_LEFT, 1),
    ]:  # fmt: skip
        press(driver, key, times)
        step = cursor(driver)
        visited.append(step)
        assert shown_panel(driver, 0) == expected_panel(crawl, step - 1)
    assert visited == [2, 8, 6, total, total - 3, 1, 1]
    driver.find_element("id", "forward").click()
    driver.find_element("id", "forward").click()
    driver.find_element("id", "back").click()
    assert cursor(driver) == 2
    assert shown_panel(driver, 0) == expected_panel(crawl, 1)
    # Every step of the crawl, one after the other: the panel agrees with the data at each.
    for step in range(1, total + 1):
        driver.execute_script(
            "const s = document.getElementById('slider'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('input'));",
            step - 1,
        )
        assert shown_panel(driver, 0) == expected_panel(crawl, step - 1), step


def test_a_click_on_the_axis_jumps_to_the_nearest_step(driver: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import Select

    data = open_page(driver, pages["stage2"])
    Select(driver.find_element("id", "xmode")).select_by_value("steps")  # evenly spaced
    canvas = driver.find_element("id", "lanes")
    low, high, gutter, margin = json.loads(canvas.get_attribute("data-view"))
    width, height = canvas.size["width"], canvas.size["height"]
    total = len(data["crawls"][0]["steps"]["t"])
    for target in (total // 3, total - 2):
        x = gutter + (target - low) / (high - low) * (width - gutter - margin)
        # Selenium's offsets are from the element's centre.
        ActionChains(driver).move_to_element_with_offset(
            canvas, int(x - width / 2), int(12 - height / 2)
        ).click().perform()
        assert cursor(driver) == target + 1


def test_play_moves_on_and_pause_stops(driver: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    def state(d: Any) -> tuple[int, int, str]:
        """The step, the number of steps and the play button's text, read at one moment."""
        said = d.execute_script(
            "return [document.getElementById('step-no').textContent,"
            " document.getElementById('play').textContent]"
        )
        found = re.fullmatch(r"step (\d+) of (\d+)", said[0])
        assert found, said
        return int(found[1]), int(found[2]), said[1]

    open_page(driver, pages["stage2"], "#step=1")
    driver.find_element("id", "play").click()
    # Pause while it plays, short of the last step: there play stops by itself, and a
    # click would start it again from the first.  Polled often, so a busy machine that
    # runs the page on does not skip past the moment.
    WebDriverWait(driver, 5, poll_frequency=0.02).until(
        lambda d: (seen := state(d))[0] >= 2 and "pause" in seen[2]
    )
    driver.find_element("id", "play").click()
    stopped, total, button = state(driver)
    assert stopped < total and "play" in button, (stopped, total, button)
    time.sleep(0.6)  # at 8 steps a second, long enough for a few more if it went on
    assert state(driver) == (stopped, total, button)


def test_all_three_panels_show_one_moment(driver: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.keys import Keys

    data = open_page(driver, pages["all"])
    assert [crawl["stage"] for crawl in data["crawls"]] == [
        "stage1_callbacks",
        "stage2_generators",
        "stage3_asyncio",
    ]
    order = merged(data)
    assert len(order) == sum(len(crawl["steps"]["t"]) for crawl in data["crawls"])
    for _ in range(3):
        press(driver, Keys.ARROW_RIGHT, 9)
        position = cursor(driver) - 1
        for index, crawl in enumerate(data["crawls"]):
            # Each panel shows its crawl's latest step at or before the moment.
            mine = [i for c, i in order[: position + 1] if c == index]
            if mine:
                assert shown_panel(driver, index) == expected_panel(crawl, mine[-1])
            else:
                assert shown_panel(driver, index)["step"] == "not started"
        # The crawl whose step the cursor is on is the one marked as having run.
        active = driver.find_elements("css selector", ".panel.active")
        assert [p.get_attribute("data-crawl") for p in active] == [str(order[position][0])]


def test_the_page_asks_for_nothing_from_anywhere(driver: Any, pages: dict[str, Path]) -> None:
    """From a file:// URL, the page loads no script, style, font or image: all is inline."""
    driver.get_log("performance")  # what earlier tests did
    open_page(driver, pages["all"])
    assert driver.execute_script("return location.protocol") == "file:"
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    requested = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    assert requested == [pages["all"].resolve().as_uri()]


def test_a_fragment_opens_the_page_at_a_step(driver: Any, pages: dict[str, Path]) -> None:
    data = open_page(driver, pages["all"], "#step=30")
    assert cursor(driver) == 30
    crawl, step = merged(data)[29]
    assert merged_position(data["crawls"], crawl, step) == 29  # as the screenshot computes it
    assert shown_panel(driver, crawl) == expected_panel(data["crawls"][crawl], step)


# ---- the page in Chinese -------------------------------------------------------------

#: What the page shows a reader, as text: the visible text (less what the crawls recorded:
#: code, file, what ran, URL, frames), every tooltip and label, and the window's title.
SHOWN_TEXT = """
const data = ".code, .file, dd.what, dd.url, dd.chain, script, style";
const texts = [document.title];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const parent = node.parentElement;
  if (parent.closest(data) || !parent.getClientRects().length) continue;
  if (node.textContent.trim()) texts.push(node.textContent);
}
for (const e of document.querySelectorAll("[title], [aria-label]")) {
  texts.push(e.title, e.getAttribute("aria-label") || "");
}
for (const option of document.querySelectorAll("option")) texts.push(option.textContent);
return texts.filter((text) => text.trim());
"""


def english_left(shown: list[str]) -> list[str]:
    """The pieces of the English table's texts found in what the page shows.

    A text that is the same in both tables (a term kept in English: future, task, URL)
    is left out; the rest is cut at its blanks, and each piece with a word in it must not
    be shown, as a whole word ("--max-tasks" does not show "tasks").
    """
    table = texts()
    pieces = set()
    for key, text in table["en"].items():
        if text != table["zh-CN"][key]:
            pieces |= {p.strip(" .,:;·()") for p in PLACEHOLDER.split(text)[::2]}
    all_shown = "\n".join(shown)
    return sorted(
        piece
        for piece in pieces
        if re.search("[A-Za-z]{2}", piece)
        and re.search(r"(?<![-\w])" + re.escape(piece) + r"(?![-\w])", all_shown)
    )


def test_english_left_finds_the_english_texts() -> None:
    """The check below can fail: it finds what an English page shows."""
    english = texts()["en"]
    assert english_left([english["step.idle"]]) == [english["step.idle"]]
    assert "step" in english_left(["step 3 of 20"]) and "of" in english_left(["step 3 of 20"])
    assert english_left(["--max-tasks 2", "task worker-0", "crawl"]) == []


def test_the_tree_phrases_the_page_translates_are_those_tasktree_writes() -> None:
    """The page finds tasktree.py's phrases by the table's English "tree." texts."""
    from shared.tools.instruments.tasktree import FOLDED, Node, render

    english = texts()["en"]
    folded, above = Node("w", 1, [(FOLDED, "aiohttp", 2)]), Node("r", 2, [], seen_above=True)
    lines = render(Node("crawl", 0, [], awaits=[folded, above]))
    assert lines[2].endswith(english["tree.folded"].format(n=2, where="aiohttp")), lines
    assert lines[3].endswith(english["tree.above"]), lines
    # The pages quote the folded line in both languages, as the page says it.
    chinese = texts()["zh-CN"]["tree.folded"].format(n=2, where="aiohttp")
    for page in ("README.md", "README.zh-CN.md"):
        said = (SHOW / page).read_text(encoding="utf-8")
        assert f"`{lines[2][lines[2].index('[') :]}`" in said and f"`{chinese}`" in said, page


@pytest.mark.parametrize("which", ["stage2", "all"])
def test_in_chinese_the_page_shows_no_english_text_but_the_crawls(
    driver: Any, pages: dict[str, Path], which: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    # The page in English shows its texts: the check is not blind.
    open_page(driver, pages[which], "#lang=en")
    assert len(english_left(driver.execute_script(SHOWN_TEXT))) > 30
    data = open_page(driver, pages[which], "#lang=zh-CN")
    assert driver.execute_script("return document.documentElement.lang") == "zh-CN"
    # Every step: what a step shows (a wait, the task tree) depends on the crawl's timing.
    press(driver, Keys.HOME, 1)
    for step in range(len(merged(data))):
        shown = driver.execute_script(SHOWN_TEXT)
        assert english_left(shown) == [], step
        assert any("步，共" in text for text in shown)
        press(driver, Keys.ARROW_RIGHT, 1)


def test_the_language_is_a_button_a_key_and_an_address(driver: Any, pages: dict[str, Path]) -> None:
    zh = texts()["zh-CN"]
    data = open_page(driver, pages["stage2"], "#step=3")
    total = len(data["crawls"][0]["steps"]["t"])
    panel_step = "return document.querySelector('.panel .step-no').textContent"
    button = driver.find_element("id", "lang")
    assert button.text == "中文" and cursor(driver) == 3
    button.click()
    assert driver.execute_script("return location.hash") == "#step=3&lang=zh-CN"
    assert driver.find_element("id", "step-no").text == f"第 3 步，共 {total} 步"
    assert driver.execute_script(panel_step) == f"第 3 步，共 {total} 步"
    assert driver.find_element("css selector", "h1").text == zh["page.title"]
    assert button.text == "English"
    press(driver, "l")
    assert driver.execute_script("return location.hash") == "#step=3&lang=en"
    assert cursor(driver) == 3 and driver.find_element("id", "play").text == "▶ play"
    # An address with a language opens the page in it, at its step; a changed one switches.
    open_page(driver, pages["stage2"], "#lang=zh-CN&step=4")
    assert driver.find_element("id", "step-no").text == f"第 4 步，共 {total} 步"
    driver.execute_script("location.hash = '#lang=en&step=4'")
    assert cursor(driver) == 4


def test_the_page_opens_in_its_own_language_else_the_browser_s(
    driver: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    data = open_page(driver, pages["stage2"])
    step_no = "return document.getElementById('step-no').textContent"
    for lang in (None, "zh-CN"):
        write(tmp_path / f"{lang}.html", data["crawls"], data["heading"], data["start"], lang)
    open_page(driver, tmp_path / "zh-CN.html")  # as `--lang zh-CN` made it
    assert driver.execute_script(step_no).startswith("第 ")
    open_page(driver, tmp_path / "zh-CN.html", "#lang=en")  # the address decides first
    assert driver.execute_script(step_no).startswith("step ")
    assert driver.execute_script("return navigator.language") == "en-US"
    open_page(driver, tmp_path / "None.html")  # no language given: the browser's
    assert driver.execute_script(step_no).startswith("step ")
    agent = driver.execute_script("return navigator.userAgent")
    chinese = {"userAgent": agent, "acceptLanguage": "zh-CN"}
    driver.execute_cdp_cmd("Emulation.setUserAgentOverride", chinese)
    try:
        open_page(driver, tmp_path / "None.html")
        assert driver.execute_script("return navigator.language") == "zh-CN"
        assert driver.execute_script(step_no).startswith("第 ")
        open_page(driver, pages["stage2"])  # made with --lang en: in English all the same
        assert driver.execute_script(step_no).startswith("step ")
    finally:
        driver.execute_cdp_cmd("Emulation.setUserAgentOverride", {"userAgent": agent})


def test_the_screenshot_is_a_png_of_the_whole_page(
    driver: Any, pages: dict[str, Path], tmp_path: Path
) -> None:
    data = open_page(driver, pages["stage2"])
    picture = tmp_path / "shot.png"
    browser.screenshot(pages["stage2"], picture, interesting_step(data["crawls"][0]) + 1)
    head = picture.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == browser.PROJECTOR[0] and height > browser.PROJECTOR[1]


def test_the_big_screenshot_is_a_1280x720_screen(pages: dict[str, Path], tmp_path: Path) -> None:
    need_browser()
    picture = tmp_path / "big.png"
    assert main(["all", "--out", str(pages["all"]), "--no-open", "--site-latency", "0.02", "-q",
                 "--big", "--screenshot", str(picture)]) == 0  # fmt: skip
    head = picture.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == browser.PROJECTOR


# ---- projector mode: a 1280x720 screen ------------------------------------------------


@pytest.fixture
def projector(driver: Any) -> Iterator[Any]:
    """The browser, its page area the size of a 1280x720 projector's screen."""
    width, height = browser.PROJECTOR
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    yield driver
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


#: What a page shows at this size, read from the DOM: the screen, the page's widths (no
#: sideways scrolling), and the smallest type of the elements a selector names.
MEASURE = """
const [selector] = arguments;
const sizes = [...document.querySelectorAll(selector)]
  .filter((e) => e.getClientRects().length)  // shown, not display: none
  .map((e) => parseFloat(getComputedStyle(e).fontSize));
const page = document.documentElement;
return {screen: [innerWidth, innerHeight], scroll: page.scrollWidth, width: page.clientWidth,
        smallest: Math.min(...sizes), count: sizes.length};
"""


def measure(driver: Any, selector: str) -> dict[str, Any]:
    """The screen's size, the page's scroll and client widths, and the smallest type."""
    found: dict[str, Any] = driver.execute_script(MEASURE, selector)
    assert found["screen"] == list(browser.PROJECTOR)
    return found


def box(driver: Any, selector: str) -> dict[str, float]:
    """The first shown element's rectangle, and its scroll and client widths."""
    found: dict[str, float] = driver.execute_script(
        """
        const shown = (e) => e.getClientRects().length;
        const e = [...document.querySelectorAll(arguments[0])].find(shown);
        const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                scroll: e.scrollWidth, width: e.clientWidth};
        """,
        selector,
    )
    return found


@pytest.mark.parametrize("which", ["stage2", "all"])
def test_without_a_step_the_page_opens_at_a_busy_one(
    driver: Any, pages: dict[str, Path], which: str
) -> None:
    data = open_page(driver, pages[which])
    middle = len(data["crawls"]) // 2
    busy = merged_position(data["crawls"], middle, interesting_step(data["crawls"][middle]))
    assert data["start"] == busy > 0
    assert cursor(driver) == busy + 1
    crawl, step = merged(data)[busy]
    assert shown_panel(driver, crawl) == expected_panel(data["crawls"][crawl], step)
    # The moment shown has sockets in the selector: not the empty first step.
    assert shown_panel(driver, crawl)["sockets"]


#: Every text of the page a class reads: the lanes (a canvas: its font size is the one they
#: are drawn in), the code, the panels' facts, tables and task tree, the legend, the controls.
READ = (
    "#lanes, #legend, #heading, #controls button, #controls label, .panel h2, .panel h3, "
    ".facts dt, .facts dd, .chain button, .file, .code .ln, th, td, .tree summary, .tree pre"
)

#: What is cut: every shown box (a block or a table cell) whose content is wider than it,
#: and every text written on the lanes wider than the room it had there.
CUT = """
const boxes = [...document.querySelectorAll("body *")].filter((e) => e.getClientRects().length
  && ["block", "flex", "grid", "table-cell", "list-item"].includes(getComputedStyle(e).display));
const lanes = document.getElementById("lanes");
return {
  boxes: boxes.filter((e) => e.scrollWidth > e.clientWidth)
    .map((e) => `${e.tagName}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`),
  written: JSON.parse(lanes.dataset.written),
};
"""


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("which", ["stage2", "all"])
def test_the_page_opens_readable_on_a_projector_every_crawl_whole(
    projector: Any, pages: dict[str, Path], which: str, lang: str
) -> None:
    """Without #big, at 1280x720: every text a class reads is 18 px or more, no box cuts its
    text, no label on the lanes runs past its room, and each crawl has its panel shown."""
    data = open_page(projector, pages[which], f"#lang={lang}")
    projector.execute_script("document.querySelectorAll('.tree').forEach((d) => d.open = true)")
    texts = measure(projector, READ)
    assert texts["smallest"] >= 18, texts
    assert texts["scroll"] <= texts["width"], "the page scrolls sideways"
    cut = projector.execute_script(CUT)
    assert cut["boxes"] == [], cut["boxes"]
    labels = [text for text, width, room in cut["written"]]
    assert [w for w in cut["written"] if w[1] > w[2]] == [], "a text runs past its room"
    # Which labels fit depends on how long each step took on this machine; some lane's
    # label must be written whole, or the test above would hold for a page that writes none.
    assert any(text.startswith(("worker-", "fd ", "Fetcher", "robots")) for text in labels), labels
    shown = projector.find_elements("css selector", ".panel")
    assert len(shown) == len(data["crawls"]) and all(p.is_displayed() for p in shown)
    for panel in shown:  # each with its code, at the line that ran
        assert panel.find_element("css selector", ".code .current").is_displayed()


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("which", ["stage2", "all"])
def test_big_type_puts_the_code_beside_the_lanes_at_18_px(
    projector: Any, pages: dict[str, Path], which: str, lang: str
) -> None:
    """In either language: Chinese characters are wider, and the controls must still fit."""
    open_page(projector, pages[which], f"#big&lang={lang}")
    lanes = measure(projector, "#lanes")
    assert lanes["smallest"] >= 18, "the lanes are drawn at the canvas's font size"
    for text in (".code .ln", ".facts dd", "#controls button", ".panel h2"):
        shown = measure(projector, text)
        assert shown["count"] and shown["smallest"] >= 18, (text, shown)
    assert lanes["scroll"] <= lanes["width"], "the page scrolls sideways"
    canvas, code = box(projector, "#lanes"), box(projector, ".panel .code")
    assert canvas["right"] <= code["left"], "the code is beside the lanes"
    assert code["top"] < canvas["bottom"] and code["bottom"] <= browser.PROJECTOR[1]
    assert code["bottom"] - code["top"] >= 200, "and tall enough to read a function in"
    assert code["scroll"] <= code["width"], "long lines wrap in the code, not scroll"
    # The line that ran is on the screen, in the code's box.
    current = box(projector, ".panel .code .current")
    assert code["top"] <= current["top"] < current["bottom"] <= code["bottom"]


def test_big_type_is_a_button_a_key_and_an_address(projector: Any, pages: dict[str, Path]) -> None:
    data = open_page(projector, pages["all"], "#step=5")
    big = "return document.body.classList.contains('big')"
    assert not projector.execute_script(big)
    normal, code = box(projector, "#lanes"), box(projector, ".panel .code")
    assert code["top"] > normal["bottom"], "by default, the code is below the lanes"
    projector.find_element("id", "big").click()
    assert projector.execute_script(big)
    assert projector.execute_script("return location.hash") == "#big&step=5"
    assert box(projector, "#lanes")["right"] < normal["right"], "the lanes leave room beside"
    assert cursor(projector) == 5, "the same step, larger"
    press(projector, "b")
    assert not projector.execute_script(big)
    assert projector.execute_script("return location.hash") == "#step=5"
    # An address with both opens in large type at that step, on the panel of its crawl.
    open_page(projector, pages["all"], "#big&step=12")
    assert projector.execute_script(big) and cursor(projector) == 12
    crawl, _ = merged(data)[11]
    shown = projector.find_elements("css selector", ".panel")
    assert [p.get_attribute("data-crawl") for p in shown if p.is_displayed()] == [str(crawl)]
    # The normal view fits the screen too, in either language.
    for lang in ("en", "zh-CN"):
        open_page(projector, pages["all"], f"#lang={lang}")
        found = measure(projector, "#lanes")
        assert found["scroll"] <= found["width"], lang


def test_the_diff_page_fits_a_projector_and_lists_its_pairs(projector: Any, tmp_path: Path) -> None:
    from shared.tools import sidebyside

    page = tmp_path / "diff.html"
    assert sidebyside.main(["stage1", "stage2", "--html", "--out", str(page)]) == 0
    projector.get(page.resolve().as_uri())
    code = measure(projector, "td.c:not(.none)")
    assert code["count"] > 300 and code["smallest"] >= 18
    assert code["scroll"] <= code["width"], "the page scrolls sideways"
    links = projector.find_elements("css selector", "nav a")
    assert len(links) == len(projector.find_elements("css selector", "section"))
    target = next(link for link in links if link.get_attribute("href").endswith("#crawler-work"))
    target.click()
    section = box(projector, "#crawler-work")
    assert -1 < section["top"] < 5, "the link brings its pair to the top of the screen"  # sub-pixel
    assert "Crawler.work" in projector.find_element("css selector", "#crawler-work th").text


@pytest.mark.parametrize("picture", ["compare.svg", "memory.svg", "race.svg", "latency.svg"])
def test_the_compare_pictures_fill_the_width_in_14_px_type(projector: Any, picture: str) -> None:
    from shared.tools.bench.compare import PICTURES, README_OUT

    assert picture in PICTURES  # every picture the bench page shows is looked at here
    projector.get((README_OUT / picture).resolve().as_uri())
    shown: dict[str, Any] = projector.execute_script(
        """
        const svg = document.documentElement;
        const scale = svg.getScreenCTM().a;  // screen pixels per unit of the viewBox
        const texts = [...svg.querySelectorAll("text")];
        const sizes = texts.map((t) => parseFloat(getComputedStyle(t).fontSize) * scale);
        const right = svg.getBoundingClientRect().right;
        return {width: svg.getBoundingClientRect().width, screen: innerWidth,
                viewBox: svg.getAttribute("viewBox"), smallest: Math.min(...sizes),
                cut: texts.filter((t) => t.getBoundingClientRect().right > right + 0.5)
                  .map((t) => t.textContent)};
        """
    )
    assert shown["viewBox"] and shown["screen"] == browser.PROJECTOR[0]
    assert shown["width"] == shown["screen"], "the picture scales to the window's width"
    assert shown["smallest"] >= 14, shown
    assert not shown["cut"], f"words run past the picture's right edge: {shown['cut']}"


def test_the_task_tree_says_where_every_task_waits(driver: Any, tmp_path: Path) -> None:
    """At a step where a worker waits for robots.txt, the tree nests it under robots.txt's
    task, and every chain names lines of the stage where a coroutine pauses."""
    page = tmp_path / "robots.html"
    argv = ["stage2", "--out", str(page), "--no-open", "--site-latency", "0.02", "-q"]
    assert main([*argv, "--obey-robots"]) == 0
    data = open_page(driver, page)
    crawl = data["crawls"][0]
    text, steps = crawl["strings"], crawl["steps"]
    names = [text[actor[0]] for actor in crawl["actors"]]

    def seen(state: int) -> set[str]:  # the tasks in a state, and what they wait for
        waits = crawl["states"][state][1]
        return {names[actor] for actor, _, _ in waits} | {text[label] for _, _, label in waits}

    # The steps at which a task waits for robots.txt's task, which has had its first step.
    waiting = [
        i
        for i, st in enumerate(steps["st"])
        if {"robots.txt", "task robots.txt /robots.txt"} <= seen(st)
    ]
    assert waiting
    for i in waiting[:3]:
        driver.execute_script(
            "const s = document.getElementById('slider'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('input'));",
            i,
        )
        tree: str = driver.execute_script(
            "return document.querySelector('.panel .tree pre').textContent"
        )
        # One tree from the main task down (instruments/tasktree.py), as on kill -USR1: ids kept,
        # robots.txt under the worker that waits for it, the tasks paused in our Future.
        assert tree.startswith("└── (T) crawl  id=0x"), tree
        tasks = re.findall(r"^([│ ]*)[├└]── \(T\) (\S+)  id=0x[0-9a-f]+$", tree, re.MULTILINE)
        assert sorted(name for _, name in tasks) == ["crawl", "robots.txt", "worker-0", "worker-1"]
        depth = {name: len(indent) // 4 for indent, name in tasks}
        assert depth["robots.txt"] == 2 and depth["worker-0"] == depth["worker-1"] == 1, tree
        assert tree.count("Future.__iter__()  stage2_generators/futures.py:") >= 3, tree
        source = {path: body.splitlines() for path, body in crawl["files"]}
        paused = re.findall(r"──  (\S+)\(\)  (\S+):(\d+)$", tree, re.MULTILINE)
        assert paused and all(
            "yield" in source[path][int(line) - 1] or "def " in source[path][int(line) - 1]
            for _, path, line in paused
            if path in source
        ), tree


# ---- the lanes' names, the time axis, the words of the controls ------------------------


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_stage1_lanes_are_named_by_their_job(
    driver: Any, pages: dict[str, Path], lang: str
) -> None:
    """Stage 1's lanes each hold one Fetcher after another, in one of --max-tasks slots: a
    lane is named by that slot, not 'Fetcher' twice; stages 2 and 3 keep their tasks' names."""
    data = open_page(driver, pages["all"], f"#lang={lang}")
    shown = json.loads(
        driver.execute_script("return document.getElementById('lanes').dataset.rows")
    )
    stage1 = [c["stage"] for c in data["crawls"]].index("stage1_callbacks")
    rows = [data["crawls"][stage1]["strings"][r] for r in data["crawls"][stage1]["rows"]]
    assert rows == ["Fetcher"] * len(rows) and len(rows) == 2, rows  # two in flight: two slots
    slot = texts()[lang]["lane.fetcher"]
    assert shown[stage1] == [slot.format(n=n) for n in range(1, len(rows) + 1)]
    for index, crawl in enumerate(data["crawls"]):
        if index != stage1:
            assert shown[index] == [crawl["strings"][r] for r in crawl["rows"]]


@pytest.mark.parametrize(
    ("which", "fragment", "width"),
    [
        ("all", "#big", 1280),
        ("stage2", "#big", 1280),
        ("all", "", 800),
        ("all", "", 1280),
        ("stage2", "", 1920),
    ],
)
def test_the_time_axis_has_ticks_at_every_width(
    driver: Any, pages: dict[str, Path], which: str, fragment: str, width: int
) -> None:
    """At least three labelled ticks, none over another nor past the canvas: in #big at
    1280x720 the lanes are half the screen, and the axis once showed '0.0 s' alone."""
    metrics = {"width": width, "height": 720, "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        open_page(driver, pages[which], fragment + ("&" if fragment else "#") + "lang=en")
        found = driver.execute_script(
            "const c = document.getElementById('lanes');"
            "return [JSON.parse(c.dataset.ticks || '[]'), c.clientWidth];"
        )
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    ticks, canvas = found
    assert len(ticks) >= 3, ticks
    assert re.fullmatch(r"0\.0+ s", ticks[0][0]), ticks  # the crawl's start, labelled
    for (_, left, wide), (_, after, _) in itertools.pairwise(ticks):
        assert left + wide < after, ticks
    assert all(left + wide <= canvas for _, left, wide in ticks), (ticks, canvas)


def test_the_fit_button_says_fit_in_the_glossary_s_word(
    driver: Any, pages: dict[str, Path]
) -> None:
    """GLOSSARY.md gives 'all' and 'fit' a word each: the button that fits the crawl to the
    lanes' width says the word for fit, not the one for all."""
    glossary = (SHOW.parents[1] / "GLOSSARY.md").read_text(encoding="utf-8")
    [row] = [line for line in glossary.splitlines() if line.startswith("| all; fit")]
    every, fit = (word.strip() for word in row.split("|")[2].split("；"))
    open_page(driver, pages["stage2"], "#lang=zh-CN")
    button = driver.find_element("id", "zoom-fit").text
    assert fit in button and every not in button, button


# ---- the committed pictures say what the command makes now ------------------------------

#: Every committed screenshot of the page, each with its facts beside it (command.py writes
#: them with the picture: the step, the counts, the line shown, how to make it again).
PICTURES = sorted(SHOW.glob("screenshot*.png"))


def facts_now(argv: list[str], step: int, tmp_path: Path) -> dict[str, Any]:
    """The facts the command would state in a picture made now, without taking it."""
    page = tmp_path / "page.html"
    assert main([*argv, "--out", str(page), "--no-open", "-q"]) == 0
    data = embedded(page)
    return {"argv": argv, **picture_facts(data["crawls"], step or data["start"] + 1)}


#: The facts a new crawl gives alike each time.  The merged step of `all` is not among them:
#: the three crawls interleave on one time axis as their timings fall, so it moves by a few.
STEADY = ("steps", "crawl", "crawl_step", "crawl_steps", "file", "line")


@pytest.mark.parametrize("picture", PICTURES, ids=lambda p: p.name)
def test_each_picture_states_what_the_command_makes_now(picture: Path, tmp_path: Path) -> None:
    """Remake the page as the picture's facts say it was made, and compare what it states:
    a picture of 65 steps at line 48 fails once the page has 57 and the line is 46."""
    stated = json.loads(picture.with_suffix(".json").read_text(encoding="utf-8"))
    argv, step = stated["argv"], 0
    if "--step" in argv:
        step = int(argv[argv.index("--step") + 1])
    now = facts_now(argv, step, tmp_path)
    if any(now[key] != stated[key] for key in STEADY):  # one crawl may be a slow machine's:
        now = facts_now(argv, step, tmp_path)  # a drift shows twice
    assert {key: now[key] for key in STEADY} == {key: stated[key] for key in STEADY}
    assert stated["crawl_step"] <= stated["step"] <= stated["steps"]
    assert picture.stat().st_size > 10_000, "a picture, not an empty file"


def test_every_committed_picture_is_remade_by_a_command_and_held_by_a_test() -> None:
    """The show page's screenshots have their facts (above); the bench's pictures are drawn
    from its committed results (tests/test_bench.py), compare.svg by nox -s compare."""
    import subprocess

    from shared.tools.bench.compare import PICTURES as BENCH_PICTURES

    listed = subprocess.run(
        ["git", "ls-files", "*.png", "*.svg"], capture_output=True, text=True, check=True,
        cwd=SHOW.parents[2],
    ).stdout.split()  # fmt: skip
    assert listed, "run from a git checkout"
    for path in listed:
        if path.startswith("shared/tools/show/"):
            assert (SHOW.parents[2] / path).with_suffix(".json").is_file(), path
        else:
            assert path.startswith("shared/tools/bench/"), path
            assert path.rsplit("/", 1)[1] in BENCH_PICTURES, path


def test_the_show_pages_say_what_their_pictures_show() -> None:
    """The sentence under the screenshots, in both languages, is the pictures' facts."""
    big = json.loads((SHOW / "screenshot-big.json").read_text(encoding="utf-8"))
    one = json.loads((SHOW / "screenshot.json").read_text(encoding="utf-8"))
    file = one["file"].rsplit("/", 1)[1]
    # The pages name the line by its code, not its number (tests/test_readme.py).
    source = (SHOW.parents[2] / one["file"]).read_text(encoding="utf-8").splitlines()
    code = source[one["line"] - 1].split("#")[0].strip()
    english = (SHOW / "README.md").read_text(encoding="utf-8")
    chinese = (SHOW / "README.zh-CN.md").read_text(encoding="utf-8")
    assert (
        f"stage 2's step {one['crawl_step']} of {one['crawl_steps']}, at `{code}` in `{file}`"
        in " ".join(english.split())
    )
    assert f"the three crawls' {big['steps']} steps" in " ".join(english.split())
    assert (
        f"阶段 2 的第 {one['crawl_step']} 步（共 {one['crawl_steps']} 步），停在 `{file}` 的 "
        f"`{code}`" in "".join(chinese.split("\n"))
    )
    assert f"三次爬取共 {big['steps']} 步" in "".join(chinese.split("\n"))
    assert big["line"] == one["line"] and big["crawl_step"] == one["crawl_step"]
