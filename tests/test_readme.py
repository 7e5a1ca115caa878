"""The pages must say true things: what they link exists, what they show is what runs today.

README.md is the entry; the rest sits beside what it describes (shared/CLI.md,
shared/tools/show/README.md, shared/tools/bench/README.md, ...).  These tests hold every
page to the repository:

- every relative link leads to a file or folder, and every ``#anchor`` to a heading;
- the code the ideas table names exists;
- every sample of output a page shows (a traceback, a trace, a table, a count of lines
  or of URLs, the command line's options, the JSON's fields) is what the command prints
  today.  When the code moves, a test here fails and prints what to paste instead.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import itertools
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shared import STAGES
from shared.testsite import Site
from shared.tools import sidebyside
from shared.tools.bench.bench import BOOK as BENCH_BOOK
from shared.tools.bench.bench import COMMITTED_JSON, markdown
from shared.tools.bench.compare import Row, format_table
from shared.tools.bench.figures import kib_per_fetch
from shared.tools.bench.measure import CRAWLERS, count_lines
from shared.tools.cli import build_parser
from shared.tools.language import Phrasebook
from shared.tools.show import samples

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHOW = ROOT / "shared" / "tools" / "show" / "README.md"
BENCH = ROOT / "shared" / "tools" / "bench" / "README.md"
CLI = ROOT / "shared" / "CLI.md"
STAGE_PACKAGES = ["stage1_callbacks", "stage2_generators", "stage3_asyncio"]
BOUND_S = 60  # far above any run here: only a hang ever reaches it
# A reference looks like `stage1_callbacks/loop.py:EventLoop.run_once` (the name is optional).
REFERENCE = re.compile(r"`([\w/]+\.py)(?::([\w.]+))?`")
# Pages that are linked before they are written: each must still be missing (a test says
# so), so that the day one is written, it comes off this list and its links are checked.
LINKED_BEFORE_WRITTEN: set[str] = set()


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def pages(*patterns: str) -> list[Path]:
    """Every file of the repository git knows of (the untracked ones too) that matches one
    of ``patterns``: by default, every markdown page."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *(patterns or ["*.md"])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def fenced_blocks(text: str) -> list[str]:
    """The text of each fenced code block (```...```), in order."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)


def prose(text: str) -> str:
    """A page without its code: fenced blocks and `inline code` hold no links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, numbered as GitHub numbers repeated ones."""
    return set(anchor_list(text))


def anchor_list(text: str) -> list[str]:
    """The anchors of a page's headings in the page's order."""
    found: list[str] = []
    for heading in re.findall(r"^#{1,6} (.+)$", prose_keep_code_text(text), re.MULTILINE):
        base, n = slug(heading), 0
        name = base
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.append(name)
    return found


def prose_keep_code_text(text: str) -> str:
    """A page without its fenced blocks (a `# comment` in a shell block is no heading)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def links(text: str) -> list[str]:
    """The targets of a page's markdown links and images, outside code."""
    return re.findall(r"\]\(([^)\s]+)\)", prose(text))


# --- links ---------------------------------------------------------------------------------


def broken_links(page: Path) -> list[str]:
    """The relative links of one page that lead nowhere, or to an anchor that is not there."""
    broken = []
    for target in links(read(page)):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:: not ours to check here
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        name = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if name in LINKED_BEFORE_WRITTEN and not dest.exists():
            continue
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and (dest.is_dir() or anchor not in anchors(read(dest))):
            broken.append(f"{target} (no heading with that anchor)")
    return broken


def test_every_relative_link_and_anchor_in_every_page_leads_somewhere() -> None:
    checked = pages()
    assert {README, SHOW, BENCH, CLI} <= set(checked)
    broken = {str(p.relative_to(ROOT)): b for p in checked if (b := broken_links(p))}
    assert not broken, f"links that lead nowhere: {broken}"


def test_the_link_check_sees_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    page = ROOT / "shared" / "a-page-written-by-this-test.md"
    page.write_text(
        "# A page\n\n[ok](CLI.md#the-options) [gone](no-such.md) [no](CLI.md#no-such)\n"
        "`[in code](nowhere.md)`\n\n```\n[in a block](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    try:
        assert broken_links(page) == [
            "no-such.md (no such file)",
            "CLI.md#no-such (no heading with that anchor)",
        ]
    finally:
        page.unlink()


def test_the_anchors_are_githubs() -> None:
    assert slug("`--trace`: the loop, step by step") == "--trace-the-loop-step-by-step"
    assert slug("Where a Ctrl-C lands") == "where-a-ctrl-c-lands"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


def test_pages_linked_before_they_are_written_are_still_missing() -> None:
    """Once such a page exists, take it off LINKED_BEFORE_WRITTEN so its links are checked."""
    written = sorted(name for name in LINKED_BEFORE_WRITTEN if (ROOT / name).exists())
    assert not written, f"written now: take {written} off LINKED_BEFORE_WRITTEN"
    linked = {target for page in pages() for target in links(read(page))}
    for name in LINKED_BEFORE_WRITTEN:
        assert any(target.endswith(Path(name).name) for target in linked), name


# --- the entry page ----------------------------------------------------------------------------


def test_the_readme_is_an_entry_not_a_wall() -> None:
    text = read(README)
    assert len(text.splitlines()) <= 250
    assert "nox -s tests" in text
    for heading in ("## Quickstart", "## Why async", "## The chapter's ideas", "## Where to go"):
        assert heading in text, heading


def ideas_table() -> str:
    text = read(README)
    start = text.index("## The chapter's ideas, stage by stage")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def defines(path: Path, qualname: str) -> bool:
    """Tell whether a module defines a class, function or method of that dotted name."""
    scope: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in qualname.split("."):
        found = [
            node
            for node in scope
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == part
        ]
        if not found:
            return False
        scope = found[0].body
    return True


def test_every_file_and_function_in_the_ideas_table_exists() -> None:
    references = REFERENCE.findall(ideas_table())
    assert len(references) >= 25, "the table should map every idea in every stage"
    missing = [
        f"{file}:{name}"
        for file, name in references
        if not (ROOT / file).is_file() or (name and not defines(ROOT / file, name))
    ]
    assert not missing, f"the README names code that does not exist: {missing}"


def test_defines_can_tell_a_missing_name() -> None:
    path = ROOT / "stage2_generators" / "tasks.py"
    assert defines(path, "Task._step")
    assert not defines(path, "Task.no_such_method")


def test_each_stage_is_under_the_500_lines_the_readme_says() -> None:
    assert "Each stage is under 500 lines of code" in read(README)
    for crawler in CRAWLERS[:3]:
        assert count_lines(crawler.files) < 500, crawler.name


#: The book's budget for each stage, its framework included, counted as count_lines does
#: (stage 2: under 500, its module headers being docstrings that count).
BUDGETS = {"stage1_callbacks": 400, "stage2_generators": 499, "stage3_asyncio": 140}


def test_each_stage_keeps_to_its_budget() -> None:
    for crawler in CRAWLERS[:3]:
        lines = count_lines(crawler.files)
        assert lines <= BUDGETS[crawler.name], f"{crawler.name}: {lines} lines"


# --- the test site -----------------------------------------------------------------------------


def test_the_default_site_has_as_many_urls_as_its_page_says() -> None:
    """The page's count of the default site's URLs is the oracle's, not a memory of it."""
    text = read(ROOT / "shared" / "testsite" / "README.md")
    found = re.search(r"`Site\(\)`[^.]*? has (\d+) URLs", text)
    assert found, "the sentence giving the default site's size has changed: update this test"
    site, base_url = Site(), "http://127.0.0.1:8080/"
    records = site.expected(base_url)
    linked = site.expected(base_url, ignore_robots=True)  # the same, but for /robots.txt
    assert set(records) - set(linked) == {base_url + "robots.txt"}
    assert int(found.group(1)) == len(linked)


# --- output a command prints -------------------------------------------------------------------


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGV`` from the repository's root, as the pages' commands run there."""
    return subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        stdin=subprocess.DEVNULL,
    )


def noxfile_list(name: str) -> list[str]:
    """A list the noxfile assigns to ``name`` (as ``demo = [...]``), so tests run what nox runs."""
    found = re.search(rf"^\s*{name} = (\[.*\])$", read(ROOT / "noxfile.py"), re.MULTILINE)
    assert found, f"noxfile.py no longer has `{name} = [...]`"
    value = ast.literal_eval(found[1])
    assert isinstance(value, list)
    return [str(item) for item in value]


PORT = re.compile(r"127\.0\.0\.1:\d+")


def test_the_stack_ripping_tracebacks_are_what_the_command_prints() -> None:
    """Both show pages, both stages, every line, the port aside; the command that writes them
    again when the code moves is the one the page names."""
    text = read(SHOW)
    for session in ("stage1", "stage2"):
        assert f"nox -s {session} -- {samples.DEMO}" in text
    assert "`python -m shared.tools.show.samples`" in text
    stale = samples.behind()
    assert not stale, f"behind: {stale}; run `python -m shared.tools.show.samples`"


def trace_steps(text: str) -> list[tuple[str, str, str]]:
    """--trace lines as (who, what, url): times, port and socket numbers left out."""
    steps = []
    for line in text.splitlines():
        if re.match(r"^ *\d+\.\d{4}  ", line):
            _when, rest = line.split(None, 1)
            who, what_url = re.split(r"\s{2,}", rest, maxsplit=1)
            what, url = what_url.rsplit(None, 1)
            steps.append((re.sub(r"^fd \d+$", "fd", who), what.strip(), PORT.sub("PORT", url)))
    return steps


@pytest.mark.parametrize("package", ["stage1_callbacks", "stage2_generators"])
def test_each_line_of_the_documented_traces_is_one_the_trace_prints(package: str) -> None:
    """Tasks interleave differently from run to run: each documented line must appear."""
    text = read(SHOW)
    assert "nox -s trace -- stage1" in text
    marker = {"stage1_callbacks": "-> _on_connected", "stage2_generators": "work>fetch>"}[package]
    (documented,) = [b for b in fenced_blocks(text) if trace_steps(b) and marker in b]
    shown = trace_steps(documented)
    assert len(shown) >= 10
    for _ in range(3):  # a step that found its socket ready takes no line: give timing 3 tries
        done = run(["-m", package, *noxfile_list("demo")])
        assert done.returncode == 0, done.stderr
        printed = trace_steps(done.stderr)
        # A sock_recv step is taken only when the answer was not in yet (the page says so):
        # where this run has none for that URL, there is nothing to compare it with.
        received = {url for _, what, url in printed if ">sock_recv>" in what}
        missing = [
            step
            for step in shown
            if step not in printed and (">sock_recv>" not in step[1] or step[2] in received)
        ]
        if not missing and shown[0] == printed[0]:
            return
    pytest.fail(f"lines the trace no longer prints: {missing}\nit printed: {printed}")


def test_stage_3s_trace_reads_as_the_page_says() -> None:
    text = read(SHOW)
    said = ["`worker-0 work started`", "`work>fetch>request <- ClientResponse`"]
    assert all(words in text for words in said) and "`raise CancelledError`" in text
    assert "`work <- ('http://127.0.0.1:PORT/p/2', 10)`" in text
    done = run(["-m", "stage3_asyncio", *noxfile_list("demo")])
    assert done.returncode == 0, done.stderr
    printed = trace_steps(done.stderr)
    assert ("worker-0", "work started", "-") in printed
    assert [s for s in printed if s[1] == "work>fetch>request <- ClientResponse" and s[2] != "-"]
    assert [s for s in printed if s[1].startswith("work <- ('http") and s[2] == "-"]
    assert [s for s in printed if s[1] == "work <- raise CancelledError"], printed


def test_ctrl_c_lands_where_the_page_says() -> None:
    text = read(SHOW)
    command = "nox -s trace -- stage1 --site-pages 60 --site-latency 0.2"
    assert command in text and "`readable -> on_ctrl_c`" in text
    argv = ["-m", "stage1_callbacks", *noxfile_list("demo"), *command.split("stage1 ")[1].split()]
    proc = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + BOUND_S
        while b"-> _on_readable" not in proc.stderr.readline():  # the crawl is under way
            assert time.monotonic() < deadline and proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert [step for step in trace_steps(rest.decode()) if step[1] == "readable -> on_ctrl_c"]


ROUNDTRIP = ROOT / "stage2_generators" / "ROUNDTRIP.md"


def test_the_round_trip_s_last_trace_lines_are_the_trace_s() -> None:
    """The crawl's end as `nox -s trace -- stage2` prints it: the same tasks, resumed with the
    same, in the same order; a URL is compared only as there or not (its pages vary)."""
    for page in (ROUNDTRIP, chinese(ROUNDTRIP)):
        text = read(page)
        assert "nox -s trace -- stage2" in text
        (block,) = [b for b in fenced_blocks(text) if trace_steps(b)]
        documented = [(who, what, url == "-") for who, what, url in trace_steps(block)]
        assert len(documented) >= 4 and documented[-1][:2] == (
            "crawl",
            "crawl <- raise CancelledError",
        )
    done = run(["-m", "stage2_generators", *noxfile_list("demo")])
    assert done.returncode == 0, done.stderr
    printed = [(who, what, url == "-") for who, what, url in trace_steps(done.stderr)]
    assert printed[-len(documented) :] == documented


def show_steps(package: str) -> list[tuple[str, str]]:
    """The steps of the page `nox -s show -- STAGE` makes, as (actor, what): recorded here."""
    from shared.crawling import Options
    from shared.testsite import serve
    from shared.tools.show.command import DEFAULTS
    from shared.tools.show.record import recording

    # The crawl the command makes by default, spelled here: a change there is seen.
    assert DEFAULTS == [
        "--site-pages",
        "6",
        "--max-tasks",
        "2",
        "--site-latency",
        "0.1",
        "--ignore-robots",
    ]
    stage = importlib.import_module(package)
    with serve(Site(6, traps=False, latency=0.1)) as base_url, recording(package) as recorder:
        stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
    assert recorder.errors == []
    return [(recorder.actors[step.actor].name, step.what) for step in recorder.steps]


#: What each show-page address the round trip names must open at: the actor, and how its
#: step's chain (and, in stage 2, what it was resumed with) begins.
ROUND_TRIP_STEPS = {
    ("stage2", 4): ("worker-0", "work>fetch>request>sock_connect>_when_ready <- None"),
    ("stage2", 5): ("worker-0", "work>fetch>request>sock_recv>_when_ready <- bytes["),
    ("stage3", 4): ("worker-0", "work>fetch>request"),
}


def test_each_show_step_the_round_trip_names_is_the_step_the_page_shows() -> None:
    for page in (ROUNDTRIP, chinese(ROUNDTRIP)):
        named = re.findall(r"out/show-(stage\d)\.html#step=(\d+)", read(page))
        assert {(stage, int(n)) for stage, n in named} == set(ROUND_TRIP_STEPS), page.name
    for name in ("stage2", "stage3"):
        steps = show_steps(STAGES[name])
        for (stage, n), (actor, what) in ROUND_TRIP_STEPS.items():
            if stage == name:
                assert steps[n - 1][0] == actor and steps[n - 1][1].startswith(what), steps[:n]


def test_every_function_the_round_trip_names_exists() -> None:
    for page in (ROUNDTRIP, chinese(ROUNDTRIP)):
        ours = ("stage", "shared/")  # asyncio's files (`Lib/asyncio/...`) are CPython's
        references = [(f, n) for f, n in REFERENCE.findall(read(page)) if f.startswith(ours)]
        assert len(references) >= 10
        missing = [f"{f}:{n}" for f, n in references if not defines(ROOT / f, n)]
        assert not missing, missing


# --- tables ------------------------------------------------------------------------------------


RESULTS = BENCH.parent / "RESULTS.md"


@pytest.mark.parametrize("page", [BENCH, RESULTS], ids=lambda page: page.name)
def test_the_benchmark_table_is_what_bench_markdown_prints(page: Path) -> None:
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    table = markdown(doc)
    assert table.strip() in read(page), "paste `python -m shared.tools.bench.bench --markdown`"


def test_the_s2_cpu_figures_in_the_prose_are_the_tables() -> None:
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    (row,) = [line for line in markdown(doc).splitlines() if line.startswith("| S2 crawler CPU")]
    cells = [float(cell) for cell in row.strip("|").split("|")[1:]]
    bound = re.search(r"bound ([\d.]+) s", markdown(doc))
    assert bound
    page = " ".join(read(BENCH).split())
    assert f"{min(cells):.2f} to {max(cells):.2f} ms of CPU per page" in page
    work = f"{min(cells) * 2:.1f} to {max(cells) * 2:.1f} s of work"  # 2,000 pages, in s
    assert f"{work} against the {bound[1]} s the latency asks for" in page


def test_the_latency_picture_s_prose_is_the_committed_s2() -> None:
    s2 = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))["S2"]
    ratio = {name: entry["median"] for name, entry in s2["results"].items()}
    rounds = round(s2["level_bound_s"] / s2["latency"])
    page = " ".join(read(BENCH).split())
    assert f"{rounds} rounds of {s2['latency'] * 1000:g} ms, {s2['level_bound_s']:.2f} s" in page
    stages = [f"{ratio[name]:.2f}x" for name in sorted(ratio) if name.startswith("stage")]
    said = f"The threads take {ratio['threaded']:.2f}x of it, the stages {', '.join(stages[:2])}"
    assert f"{said} and {stages[2]}." in page


@pytest.mark.parametrize("page", [BENCH, RESULTS], ids=lambda page: page.name)
def test_the_compare_table_holds_what_the_code_says_today(page: Path) -> None:
    """Time, rate, queue and memory are one run's; the rest is held to the code."""
    text = read(page)
    (block,) = [b for b in fenced_blocks(text) if b.startswith("crawler ")]
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    kib = kib_per_fetch(doc)
    linked = len(Site().expected("http://127.0.0.1:8080/", ignore_robots=True))
    rows = []
    for crawler, line in zip(CRAWLERS, block.splitlines()[2:], strict=True):
        cells = line.split()
        assert cells[0] == crawler.name
        seconds, per_s, queued, rss = float(cells[3]), float(cells[4]), int(cells[5]), cells[8]
        lines = count_lines(crawler.files)
        kib_now = kib.get(crawler.name)
        rows.append(
            Row(crawler.name, linked, "yes", seconds, per_s, queued, 10, kib_now, float(rss), lines)
        )
    expected = format_table(rows)
    assert block.rstrip("\n") == expected, "paste this instead:\n" + expected


# --- the command line and the JSON -------------------------------------------------------------


OPTION = re.compile(r"(?<![\w-])(--?[a-z][\w-]*)")


def test_the_options_table_and_usage_list_every_option_and_no_other() -> None:
    text = read(CLI)
    usage = build_parser("STAGE").format_usage()
    options = set(OPTION.findall(usage)) - {"-h"}  # as the usage names them: -v, not --verbose
    assert {"--max-tasks", "--trace", "-q"} <= options
    start = text.index("| option | default | meaning |")
    table = text[start : text.index("\n\n", start)]
    first_cells = re.findall(r"^\| ([^|]+) \|", table, re.MULTILINE)
    listed = {option for cell in first_cells for option in OPTION.findall(cell)}
    assert listed == options, f"parser only: {options - listed}; page only: {listed - options}"
    shown = set(OPTION.findall(fenced_blocks(text[:start])[-1])) - {"-m"}  # python -m
    assert shown == options, f"parser only: {options - shown}; page only: {shown - options}"


def shape(value: Any) -> Any:
    """A JSON value's shape: the keys of an object, the type of anything else."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def test_the_json_example_has_the_fields_a_crawl_writes(tmp_path: Path) -> None:
    (example,) = [b for b in fenced_blocks(read(CLI)) if b.startswith('{"stage"')]
    path = tmp_path / "crawl.json"
    done = run(["-m", "stage1_callbacks", "--site-pages", "3", "-q", "--json", str(path)])
    assert done.returncode == 0, done.stderr
    written = json.loads(path.read_text(encoding="utf-8"))
    shown = json.loads(example)
    page = next(f for f in written["fetches"] if f["status"] == 200 and f["encoding"])
    assert shape({**written, "fetches": [page]}) == shape(shown)


# --- the teachers' pages -----------------------------------------------------------------------

TEACHERS = ROOT / "shared" / "tools" / "exercises" / "teachers"
EXERCISES = ROOT / "shared" / "tools" / "exercises"
LABS = EXERCISES / "labs"


def sessions() -> set[str]:
    """The noxfile's sessions, with a tests-X.Y session per Python version it lists."""
    tree = ast.parse(read(ROOT / "noxfile.py"))
    names = {
        named[1] if (named := re.search(r"name='(\w+)'", ast.unparse(decorator))) else node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
        if "session" in ast.unparse(decorator)
    }
    return names | {f"tests-{version}" for version in noxfile_list("PYTHONS")}


def test_every_nox_session_a_page_names_exists() -> None:
    known = sessions()
    assert {"tests", "stage1", "exercise", "tests-3.11"} <= known
    named = {
        (page.relative_to(ROOT).as_posix(), name)
        for page in pages()
        for name in re.findall(r"\bnox -s ([\w.-]+)", read(page))
    }
    assert not {(page, name) for page, name in named if name not in known}


def exercise_order() -> list[str]:
    """The exercises' names in the chapter's order (the `order` of each exercise.toml)."""
    import tomllib

    found = [
        (tomllib.loads(read(toml))["order"], toml.parent.name)
        for toml in EXERCISES.glob("*/exercise.toml")
    ]
    return [name for _, name in sorted(found)]


def test_the_course_plan_has_every_exercise_in_the_chapters_order_and_every_lab() -> None:
    text = read(TEACHERS / "plan-weeks.md")
    named = re.findall(r"^- exercise `([\w-]+)`", text, re.MULTILINE)
    assert named == exercise_order()
    linked = set(re.findall(r"\(\.\./labs/(\d\d-[\w-]+\.md)\)", text))
    labs = {path.name for path in LABS.glob("[0-9][0-9]-*.md") if ".zh-CN." not in path.name}
    assert linked == labs


@pytest.mark.parametrize("name", ["plan-90-minutes.md", "plan-90-minutes.zh-CN.md"])
def test_the_90_minute_plan_fills_90_minutes_with_marked_steps(name: str) -> None:
    text = read(TEACHERS / name)
    for english, chinese in (("teacher-demo", "教师演示"), ("student-work", "学生练习")):
        text = text.replace(chinese, english)  # the Chinese plan's labels
    rows = re.findall(r"^\| (\d+)-(\d+) \| [^|]+ \| ([\w-]+) \|", text, re.MULTILINE)
    assert rows and rows[0][0] == "0" and rows[-1][1] == "90"
    assert all(int(a[1]) == int(b[0]) for a, b in itertools.pairwise(rows))
    assert {kind for _, _, kind in rows} == {"teacher-demo", "student-work"}
    sections = re.findall(
        r"^### (\d+)-(\d+)[:：].+[(（](teacher-demo|student-work)[)）]$", text, re.MULTILINE
    )
    for start, end, kind in rows:  # each step lies in a section marked the same way
        assert any(
            int(a) <= int(start) and int(end) <= int(b) and k == kind for a, b, k in sections
        ), (start, end, kind)


def test_the_quiz_asks_about_every_lab_and_every_question_has_its_answer() -> None:
    quiz, answers = read(TEACHERS / "quiz.md"), read(TEACHERS / "quiz-answers.md")
    questions = re.findall(r"^(\d+)\. (.+?)\*\(lab (\d)\)\*", quiz, re.MULTILINE | re.DOTALL)
    assert [int(n) for n, _, _ in questions] == list(range(1, len(questions) + 1))
    labs = {int(path.name[:2]) for path in LABS.glob("[0-9][0-9]-*.md")}
    assert {int(lab) for _, _, lab in questions} == labs
    numbered = re.findall(r"^(\d+)\. ", answers, re.MULTILINE)
    assert numbered == [n for n, _, _ in questions]
    for answer in re.split(r"^\d+\. ", answers, flags=re.MULTILINE)[1:]:
        assert " ".join(answer.split()[:6]) not in " ".join(quiz.split()), "an answer in the quiz"


def test_an_unverified_certificate_reads_as_the_real_web_page_says(tmp_path: Path) -> None:
    from shared.testsite import serve
    from shared.testsite.tls import local_tls

    page = read(ROOT / "shared" / "REAL_WEB.md")
    (shown,) = [b.strip() for b in fenced_blocks(page) if "CERTIFICATE_VERIFY_FAILED" in b]
    with serve(Site(pages=2, traps=False), tls=local_tls(str(tmp_path))) as base_url:
        done = run(["-m", "stage1_callbacks", base_url, "--ignore-robots", "-q"])
    assert done.returncode == 0, done.stderr
    (printed,) = [line for line in done.stdout.splitlines() if "CERTIFICATE_VERIFY" in line]

    def same(line: str) -> str:  # the port, and the line of CPython's C source, aside
        return re.sub(r"_ssl\.c:\d+", "_ssl.c:N", PORT.sub("127.0.0.1:PORT", line.strip()))

    assert same(shown) == same(printed), "paste this instead:\n" + printed.strip()


def test_the_layout_names_what_is_there_and_every_module_of_shared() -> None:
    text = read(README)
    (block,) = [b for b in fenced_blocks(text[text.index("## Layout") :]) if "shared/" in b]
    named = set()
    for line in block.splitlines():
        found = re.match(r"^( {0,4})([\w-]+(?:/|\.\w+))\s", line + " ")
        if not found or found[2] == "out/":  # out/ is made on first use
            continue
        parent = [ROOT, ROOT / "shared", ROOT / "shared" / "tools"][len(found[1]) // 2]
        path = parent / found[2].rstrip("/")
        assert path.exists(), f"the layout names {path.relative_to(ROOT)}, which is not there"
        named.add(path)
    modules = {p for p in (ROOT / "shared").glob("*.py") if p.name != "__init__.py"}
    assert not modules - named, f"modules of shared/ missing from the layout: {modules - named}"
    assert len(named) >= 25


@pytest.mark.parametrize("page", ["README.md", "README.zh-CN.md"])
@pytest.mark.parametrize(("exercise", "function"), [("per-host", "host_slot"), ("delay", "polite")])
def test_what_each_style_costs_counts_each_stages_function_as_the_book_does(
    exercise: str, function: str, page: str
) -> None:
    """The exercise's table of lines: the function's own count is the code's; the sums add up."""
    text = read(EXERCISES / exercise / page)
    heading = "## 每种风格的代价" if page.endswith(ZH) else "## What each style costs"
    section = text[text.index(heading) :]
    rows = re.findall(r"^\| (\d), \w+ \| (\d+) \| (\d+)[:|][^\n]*\| (\d+) \|$", section, re.M)
    assert [row[0] for row in rows] == ["1", "2", "3"], "a row per stage"
    for (stage, own, elsewhere, total), package in zip(rows, STAGE_PACKAGES, strict=True):
        source = ROOT / package / "crawler.py"
        lines = read(source).splitlines()
        (node,) = [
            node
            for node in ast.walk(ast.parse("\n".join(lines)))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
        ]
        counted = sum(
            1
            for line in lines[node.lineno - 1 : node.end_lineno]
            if line.strip() and not line.strip().startswith("#")
        )
        assert int(own) == counted, f"stage {stage}'s {function} counts {counted} lines"
        assert int(own) + int(elsewhere) == int(total), f"stage {stage}: the sum"


# --- the Chinese pages -------------------------------------------------------------------------
#
# A page a student follows in class has a Chinese version beside it, README.zh-CN.md beside
# README.md.  The prose is translated; what a student types or reads as code is not: each
# Chinese page must keep its English page's code blocks (their comments aside, which are
# prose), commands, headings (their level and their code) and links, so that a change to the
# English page that the Chinese one does not follow fails a test that names the page.

ZH = ".zh-CN.md"
GLOSSARY = ROOT / "shared" / "GLOSSARY.md"
#: The pages a student follows in class, each of which must have its Chinese version.
IN_CLASS = [
    README,
    *(ROOT / package / "README.md" for package in STAGE_PACKAGES),
    SHOW,
    ROOT / "shared" / "tools" / "browser" / "README.md",
    ROOT / "stage2_generators" / "ROUNDTRIP.md",
    EXERCISES / "README.md",
    LABS / "README.md",
    *sorted(p for p in LABS.glob("[0-9][0-9]-*.md") if not p.name.endswith(".zh-CN.md")),
    TEACHERS / "README.md",
    TEACHERS / "plan-90-minutes.md",
    *sorted(path.parent / "README.md" for path in EXERCISES.glob("*/exercise.toml")),
]
ENGLISH_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
CHINESE_DIGITS = "零一二三四五六七八九"


def number(word: str) -> int:
    """A count as a page writes it: 13, thirteen, Thirteen, 十三, 十."""
    if word.isdigit():
        return int(word)
    if word.lower() in ENGLISH_NUMBERS:
        return ENGLISH_NUMBERS.index(word.lower())
    tens, _, ones = word.rpartition("十") if "十" in word else ("", "", word)
    if "十" in word:
        return 10 * (CHINESE_DIGITS.index(tens) if tens else 1) + (
            CHINESE_DIGITS.index(ones) if ones else 0
        )
    return CHINESE_DIGITS.index(word)


#: "ten questions", "13 questions", "十三道题", "13 道题": a count of the quiz's questions.
QUESTIONS = re.compile(
    rf"\b(\d+|(?i:{'|'.join(ENGLISH_NUMBERS)})) questions\b"
    r"|([0-9]+|[零一二三四五六七八九十]+) ?道题"
)


def stated_question_counts(text: str) -> list[int]:
    """Every count of questions a text states."""
    return [number(english or chinese) for english, chinese in QUESTIONS.findall(text)]


def test_every_count_of_the_quiz_s_questions_is_the_number_it_asks() -> None:
    """The quiz and every page that links it (in either language) say how many it asks."""
    quiz = TEACHERS / "quiz.md"
    asked = len(re.findall(r"^\d+\. ", read(quiz), re.MULTILINE))
    linking = [page for page in pages() if page == quiz or "quiz.md)" in read(page)]
    stated = {page_id(page): stated_question_counts(read(page)) for page in linking}
    assert sum(map(len, stated.values())) >= 3, stated  # the quiz and its two tables
    wrong = {page: counts for page, counts in stated.items() if set(counts) - {asked}}
    assert not wrong, f"the quiz asks {asked} questions; these pages say: {wrong}"


def test_the_question_count_reads_digits_and_words_in_both_languages() -> None:
    text = "Ten questions; 13 questions; 根据预测出的十三道题；十道题；12 道题"
    assert stated_question_counts(text) == [10, 13, 13, 10, 12]


# A command as a page writes it in `inline code`: what a student types.
COMMAND = re.compile(r"^(?:nox|python3?|pipx|git|pip|apt(?:-get)?|brew|mkdir|\$PY)\s|^PY=|^\.venv/")


def chinese(page: Path) -> Path:
    """The Chinese version of an English page: README.md -> README.zh-CN.md."""
    return page.with_name(page.name.removesuffix(".md") + ZH)


def english(page: Path) -> Path:
    """The English page a Chinese one translates: README.zh-CN.md -> README.md."""
    return page.with_name(page.name.removesuffix(ZH) + ".md") if page.name.endswith(ZH) else page


def translated() -> list[Path]:
    """Every Chinese page of the repository."""
    return sorted(page for page in pages() if page.name.endswith(ZH))


def code_blocks(text: str) -> list[str]:
    """Every fenced block, those indented inside a list item too, without the indentation."""
    blocks = re.findall(r"^( *)```[^\n]*\n(.*?)^ *```", text, re.DOTALL | re.MULTILINE)
    return [re.sub(f"(?m)^{indent}", "", block) for indent, block in blocks]


#: A comment in a code block: from a ``#`` that begins a line or follows a space to the end
#: of the line (a shell's, Python's and TOML's comments, and the layout's descriptions, which
#: README.md writes as comments too).  A comment is prose: a Chinese page translates it.
COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")


def code_of(block: str) -> list[str]:
    """What a block holds for a student to type or read as code, the same in any language:
    each line without its comment and trailing spaces, the lines left empty dropped (so a
    translated comment may take more lines, or fewer)."""
    lines = (COMMENT.sub("", line).rstrip() for line in block.splitlines())
    return [line for line in lines if line]


def inline_code(text: str) -> list[str]:
    """The `inline code` of a page outside its blocks, a span broken over lines joined."""
    spans = re.findall(r"`([^`]+)`", re.sub(r"(?ms)^ *```.*?^ *```", "", text))
    return [" ".join(span.split()) for span in spans]


def commands(text: str) -> set[str]:
    """The commands and the code references (`stage2_generators/tasks.py:Task`) a page names."""
    return {c for c in inline_code(text) if COMMAND.match(c) or REFERENCE.fullmatch(f"`{c}`")}


def headings(text: str) -> list[tuple[int, list[str]]]:
    """Each heading's level and the code in it, in order: the words are the language's."""
    found = re.findall(r"^(#{1,6}) (.+)$", prose_keep_code_text(text), re.MULTILINE)
    return [(len(hashes), re.findall(r"`([^`]+)`", words)) for hashes, words in found]


def link_targets(page: Path) -> set[str]:
    """Where a page's links lead, the same in both languages: a Chinese page as its English
    one, an anchor as the number of its heading.  The links between a page and its other
    language, and to the glossary, are left out: a page may have them and its other not."""
    found = set()
    for target in links(read(page)):
        if re.match(r"^[a-z]+:", target):
            found.add(target)
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if dest.is_file() and anchor and anchor in anchor_list(read(dest)):
            anchor = str(anchor_list(read(dest)).index(anchor))
        dest = english(dest) if dest.name.endswith(ZH) else dest
        if dest == GLOSSARY or (dest == english(page) and not anchor):
            continue
        name = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        found.add(f"{name}#{anchor}" if anchor else name)
    return found


def test_every_page_a_student_follows_has_its_chinese_version() -> None:
    assert len(IN_CLASS) >= 15 + len(exercise_order())
    missing = [page_id(chinese(page)) for page in IN_CLASS if not chinese(page).exists()]
    assert not missing, f"write these: {missing}"


def test_every_chinese_page_translates_an_english_one() -> None:
    assert chinese(README) in translated()
    alone = [str(page.relative_to(ROOT)) for page in translated() if not english(page).exists()]
    assert not alone, f"Chinese pages with no English page beside them: {alone}"


def test_the_readme_and_its_chinese_version_link_each_other_and_the_glossary_first() -> None:
    for page, other in ((README, chinese(README)), (chinese(README), README)):
        top = "\n".join(read(page).splitlines()[:4])
        assert f"]({other.name})" in top and "](shared/GLOSSARY.md)" in top, page.name


def test_every_file_and_name_the_glossary_gives_exists() -> None:
    references = REFERENCE.findall(read(GLOSSARY))
    assert len(references) >= 20
    missing = [
        f"{file}:{name}"
        for file, name in references
        if not (ROOT / file).is_file() or (name and not defines(ROOT / file, name))
    ]
    assert not missing, f"the glossary names code that does not exist: {missing}"


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def english_headings_stamp(page: Path) -> str:
    """A short hash of an English page's headings, words and all: the Chinese page keeps the
    one it was translated from, so a heading reworded in English alone is seen."""
    found = re.findall(r"^#{1,6} .+$", prose_keep_code_text(read(page)), re.MULTILINE)
    return hashlib.sha256("\n".join(found).encode()).hexdigest()[:12]


def falls_behind(page: Path) -> list[str]:
    """How a Chinese page falls behind its English page, one sentence per way (none: it
    keeps up).  The two name each other at the top; the Chinese keeps the English code
    blocks, headings (level and code, and the stamp of the English words it translates),
    commands and code references, and links, to the Chinese version of a page where there
    is one."""
    ours_text, theirs_text, theirs = read(page), read(english(page)), english(page).name
    wrong = []
    # A reader lands on either: the other language is one click away, in the first lines.
    # An exercise's instructions become a workspace's INSTRUCTIONS.md, where a link to the
    # page beside them would lead nowhere: there the Chinese page names the English one.
    ours_top, theirs_top = ("\n".join(text.splitlines()[:4]) for text in (ours_text, theirs_text))
    if (page.parent / "exercise.toml").exists():
        if "`README.md`" not in ours_top or "README.zh-CN.md" in theirs_top:
            wrong.append("top: the Chinese instructions name `README.md`, not a link")
    else:
        if f"]({theirs})" not in ours_top:
            wrong.append(f"top: link {theirs} in the first lines")
        if f"]({page.name})" not in theirs_top:
            wrong.append(f"top: {theirs} does not link {page.name} in its first lines")
    ours = [code_of(block) for block in code_blocks(ours_text)]
    others = [code_of(block) for block in code_blocks(theirs_text)]
    if ours != others:
        differ = [
            (line, their)
            for a, b in zip(ours, others, strict=False)
            for line, their in itertools.zip_longest(a, b)
            if line != their
        ]
        wrong.append(f"blocks: {len(ours)} against {len(others)}; first that differs: {differ[:1]}")
    stamp = english_headings_stamp(english(page))
    if re.findall(r"<!-- English headings: (\w+) -->", ours_text) != [stamp]:
        wrong.append(
            f"stamp: {theirs} has other headings than this page translates: bring it up to "
            f"date, then end it with <!-- English headings: {stamp} -->"
        )
    if headings(ours_text) != headings(theirs_text):
        wrong.append(
            f"headings (level, code): {headings(ours_text)} against {headings(theirs_text)}"
        )
    if commands(ours_text) != commands(theirs_text):
        here, there = commands(ours_text), commands(theirs_text)
        wrong.append(f"commands: only here {here - there}; only there {there - here}")
    if link_targets(page) != link_targets(english(page)):
        here, there = link_targets(page), link_targets(english(page))
        wrong.append(f"links: only here {here - there}; only there {there - here}")
    english_only = [
        target
        for target in links(ours_text)
        if not re.match(r"^[a-z]+:", target)
        and (dest := (page.parent / target.partition("#")[0]).resolve()).name.endswith(".md")
        and not dest.name.endswith(ZH)
        and chinese(dest).exists()
        and dest != english(page)
    ]
    if english_only:
        wrong.append(f"links: link the Chinese version of {english_only}")
    if unmarked := unmarked_english_links(page):
        wrong.append(f"links: {ENGLISH_ONLY} marks the links to English-only pages: {unmarked}")
    return wrong


#: What a Chinese page writes right after a link to a page that has no Chinese version yet:
#: "[x](x.md)（英文）", or inside a parenthesis "（见 [x](x.md)，英文）".
ENGLISH_ONLY = "（英文）"


def unmarked_english_links(page: Path) -> list[str]:
    """The links of a Chinese page whose ENGLISH_ONLY mark is wrong: missing after a link to
    an English-only page (a page, or a folder GitHub shows by its README.md, with no Chinese
    version beside it), or there after a link to a Chinese page.  The page's own English
    version and the glossary, which speaks both, need no mark."""
    wrong = []
    for target, mark in re.findall(r"\]\(([^)\s]+)\)(（英文）|，英文）)?", prose(read(page))):
        if re.match(r"^[a-z]+:", target):
            continue
        dest = (page.parent / target.partition("#")[0]).resolve()
        dest = dest / "README.md" if dest.is_dir() else dest
        english_only = (
            dest.suffix == ".md"
            and not dest.name.endswith(ZH)
            and not chinese(dest).exists()
            and dest not in (english(page), GLOSSARY)
        )
        if english_only != bool(mark) and dest.suffix == ".md":
            wrong.append(target)
    return wrong


def test_every_chinese_page_keeps_up_with_its_english_page() -> None:
    """One test for every Chinese page: it names each page that falls behind, and how."""
    assert len(translated()) >= 30
    behind = {page_id(page): wrong for page in translated() if (wrong := falls_behind(page))}
    assert not behind, "Chinese pages behind their English pages:\n" + "\n".join(
        f"{page}: {wrong}" for page, wrong in behind.items()
    )


def test_the_translation_check_sees_each_kind_of_drift(tmp_path: Path) -> None:
    """A Chinese page drifted one way at a time, in a folder of its own: each way is named
    by its own check, and by no other.  A block's comments are prose, translated."""
    text = (
        "# A\n\nEnglish · [中文](README.zh-CN.md)\n\n## B `x`\n\n"
        "Run `nox -s stage1` ([x](x.md#a), [y](y.md)).\n\n"
        "```sh\nnox -s stage1  # crawl, then report\n# the tests:\nnox -s tests\n```\n"
    )
    (tmp_path / "x.md").write_text("# A\n\n## B\n", encoding="utf-8")
    for name in ("y.md", "y.zh-CN.md"):
        (tmp_path / name).write_text("# Y\n", encoding="utf-8")
    page, translation = tmp_path / "README.md", tmp_path / "README.zh-CN.md"
    page.write_text(text, encoding="utf-8")
    stamp = f"\n<!-- English headings: {english_headings_stamp(page)} -->\n"
    good = (
        text.replace("English · [中文](README.zh-CN.md)", "[English](README.md) · 中文")
        .replace("Run", "运行")
        .replace("(y.md)", "(y.zh-CN.md)")
        .replace("(x.md#a)", "(x.md#a)（英文）")
        .replace("  # crawl, then report", "      # 爬取，然后打印报告\n# （爬取需要几秒钟）")
        .replace("# the tests:", "# 测试：")
        + stamp
    )
    translation.write_text(good, encoding="utf-8")
    assert falls_behind(translation) == []
    drifts = [
        ("top", good.replace("[English](README.md)", "English")),
        ("blocks", good.replace("```sh\nnox -s stage1", "```sh\nnox -s stage3")),
        ("blocks", good.replace("# 测试：\nnox -s tests", "# 测试：nox -s tests")),  # in a comment
        ("stamp", good.replace(stamp, "")),
        ("headings (level, code)", good.replace("## B `x`", "### B `x`")),
        ("commands", good.replace("运行 `nox -s stage1`", "运行 `nox -s stage2`")),
        ("links", good.replace("x.md#a", "x.md#b")),
    ]
    for kind, drifted in drifts:
        translation.write_text(drifted, encoding="utf-8")
        seen = {wrong.split(":")[0] for wrong in falls_behind(translation)}
        assert seen == {kind}, (kind, falls_behind(translation))
    translation.write_text(good.replace("(y.zh-CN.md)", "(y.md)"), encoding="utf-8")
    assert falls_behind(translation) == ["links: link the Chinese version of ['y.md']"]
    # x.md has no Chinese version: its links say so, and a Chinese page's do not
    for drifted, target in (
        (good.replace("（英文）", ""), "x.md#a"),
        (good + "[y](y.zh-CN.md)（英文）", "y.zh-CN.md"),
    ):
        translation.write_text(drifted, encoding="utf-8")
        assert falls_behind(translation) == [
            f"links: {ENGLISH_ONLY} marks the links to English-only pages: ['{target}']"
        ]


# --- spoilers ------------------------------------------------------------------------------


def emptied_by() -> dict[str, list[str]]:
    """Each exercise's name and the functions it empties (its exercise.toml's `replace`)."""
    import tomllib

    return {
        toml.parent.name: tomllib.loads(read(toml))["replace"]
        for toml in EXERCISES.glob("*/exercise.toml")
    }


#: The guides a reader reads in order, the round trip of a value too: in both languages.
GUIDES = [
    *(ROOT / package / "README.md" for package in STAGE_PACKAGES),
    ROOT / "stage2_generators" / "ROUNDTRIP.md",
]


def spoilers(text: str, package: str, exercises: dict[str, list[str]]) -> list[str]:
    """The functions a page names (in `code`, as `Task._step`, `_step` or `_step()`) before
    it names the exercise that empties them: the page gives the answer away."""
    spoiled = []
    for name, functions in exercises.items():
        named = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        here = named.start() if named else len(text)
        for reference in functions:
            file, qualname = reference.split(":")
            if not file.startswith((package + "/", "shared/")):
                continue
            spellings = {qualname, qualname.rsplit(".", 1)[-1]}
            for span in re.finditer(r"`([^`\n]+)`", text):
                if re.sub(r"\(.*\)$", "", span[1]) in spellings and span.start() < here:
                    spoiled.append(f"`{span[1]}` before {name}")
                    break
    return spoiled


@pytest.mark.parametrize("guide", [*GUIDES, *map(chinese, GUIDES)], ids=page_id)
def test_no_guide_names_a_function_before_the_exercise_that_empties_it(guide: Path) -> None:
    package = guide.relative_to(ROOT).parts[0]
    assert not spoilers(read(guide), package, emptied_by())


def test_the_spoiler_check_sees_a_function_named_first() -> None:
    exercises = {"s2-step": ["stage2_generators/tasks.py:Task._step"]}
    for text in ("Read `Task._step`, then s2-step.", "`_step()` first; `s2-step`"):
        assert spoilers(text, "stage2_generators", exercises), text
    assert not spoilers("Try `s2-step`, then read `_step`.", "stage2_generators", exercises)
    assert not spoilers("Read `Task._step`.", "stage1_callbacks", exercises)


# --- line numbers --------------------------------------------------------------------------
#
# No page names a line of code by its number: a lab's change, an exercise's hint, a guide
# point at code by name (`Crawler.work`, "the line `finally:`"), which stays true when the
# code above it grows.  A traceback a page samples names its lines (File "...", line 59),
# but a command prints it and a test above compares it.

LINE_NUMBER = re.compile(r"\blines?\s+[0-9]{1,4}\b|第\s*[0-9]{1,4}\s*行|\w\.py:[0-9]+|\bL[0-9]+\b")
FRAME = re.compile(r'^\s*File "[^"]+", line [0-9]+, in \S+$')


def line_numbers(text: str) -> list[str]:
    """The line numbers a page names ("lines 64 and 65", "第 64 行", "crawler.py:64", "L64",
    over a line break too), a traceback's frames aside."""
    found = []
    for match in LINE_NUMBER.finditer(text):
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.start())
        if not FRAME.match(text[start : end if end != -1 else len(text)]):
            found.append(" ".join(match[0].split()))
    return found


def test_no_page_names_a_line_number() -> None:
    """Every page, and every exercise's hints and summaries (exercise.toml), in both languages."""
    texts = [*pages(), *EXERCISES.glob("*/exercise.toml")]
    numbered = {page_id(page): found for page in texts if (found := line_numbers(read(page)))}
    assert not numbered, f"name the code instead (a function, the line's own code): {numbered}"


def test_the_line_number_check_sees_each_way_of_writing_one() -> None:
    for phrase in ("delete lines 64 and 65", "删除第 64 行", "第64行", "crawler.py:64", "see L64"):
        assert line_numbers(f"Some prose, then {phrase}.\n"), phrase
    frame = '  File "stage2_generators/crawler.py", line 59, in work\n'
    assert line_numbers(frame) == []
    assert line_numbers("the line `finally:` of `Crawler.work`, line by line\n") == []
    assert line_numbers("before\nline\n64 of it") == ["line 64"]


# --- the Chinese walk --------------------------------------------------------------------------
#
# A student who reads only Chinese starts at README.zh-CN.md, reads a stage's guide (and the
# show page, to watch a crawl) and crawls under --lang zh-CN: on that path they meet no English
# sentence outside code.  (The exercise tool's output has its test beside the tool's.)

#: The Chinese pages of the walk.  The glossary is left out: it speaks both languages.
WALK = [
    chinese(README),
    *(chinese(ROOT / package / "README.md") for package in STAGE_PACKAGES),
    chinese(SHOW),
    ROOT / "stage2_generators" / "ROUNDTRIP.zh-CN.md",
]
#: Three or more English words in a row, each of letters (a hyphen or apostrophe inside
#: allowed: built-in, page's).
ENGLISH_WORD = r"[A-Za-z]+(?:[-'’][A-Za-z]+)*"
ENGLISH_RUN = re.compile(rf"(?<![\w./-]){ENGLISH_WORD}(?:\s+{ENGLISH_WORD}){{2,}}(?![\w/-])")
#: Names of three words, written in English in Chinese text too: the chapter's authors, and
#: the file format the trace viewers read.
NAMES = {"Jesse Jiryu Davis", "Guido van Rossum", "Chrome Trace Event"}


def english_sentences(text: str) -> list[str]:
    """The English a Chinese text says in its own words: runs of three or more English words
    outside code (blocks and `spans`), link targets, URLs, HTML comments, NAMES, and outside
    quotation and title marks (“…”, 《…》), which quote what the reader meets in English
    verbatim: a title, a message a program prints, an English page's heading, a button."""
    text = re.sub(r"(?ms)^ *```.*?^ *```", " ", text)
    for held in (
        r"<!--.*?-->",
        r"`[^`]*`",
        r"\]\([^)]*\)",
        r"https?://\S+",
        r"“[^”]*”",
        r"《[^》]*》",
    ):
        text = re.sub(held, " ", text, flags=re.DOTALL)
    runs = (" ".join(run.split()) for run in ENGLISH_RUN.findall(text))
    return [run for run in runs if run not in NAMES]


def test_the_english_sentence_check_sees_english_and_leaves_code_and_quotes() -> None:
    text = (
        "读 `python -m stage1_callbacks --lang zh-CN` 的输出，见 [阶段 1](stage1/the long path.md)"
        "和 http://example.org/a b c。“Task was destroyed but it is pending!” 是 asyncio 打印的；"
        "Guido van Rossum 写了《500 Lines or Less》的一章。\n"
        "```\nnox -s show -- all  # the lanes\n```\n"
        "然后 read the report，再看 x86_64 和 robots.txt 的 Content Type。"
    )
    assert english_sentences(text) == ["read the report"]  # two words (Content Type) pass


def test_a_walk_in_chinese_meets_no_english_sentence(tmp_path: Path) -> None:
    """README.zh-CN.md, the stage guides, the show page, and a crawl under --lang zh-CN (with
    --trace-events, whose file it names as it writes it).  A
    crawl's output is held closer than a page: it has no prose of its own in English, so no
    English word at all, a word being of letters only, not all capitals (a URL, text/html,
    utf-8, max_tasks=10 are data; URL and TLS are terms the Chinese keeps, as the glossary
    says)."""
    assert all(page.exists() for page in WALK)

    def said(page: Path) -> str:  # the prose, and the comments of its blocks, prose too
        blocks = code_blocks(read(page))
        notes = [
            m[0] for block in blocks for line in block.splitlines() if (m := COMMENT.search(line))
        ]
        return read(page) + "\n" + "\n".join(notes)

    found = {page_id(page): runs for page in WALK if (runs := english_sentences(said(page)))}
    trace = tmp_path / "trace.json"
    done = run(
        [
            "-m",
            "stage1_callbacks",
            "--site-pages",
            "3",
            "--lang",
            "zh-CN",
            "--trace-events",
            str(trace),
        ]
    )
    assert done.returncode == 0 and trace.exists(), done.stderr
    assert "完成：" in done.stdout and done.stdout.count("http://") >= 4
    tokens = re.split(r"[\s，。：；、（）]+", done.stdout + done.stderr)
    crawl = [token for token in tokens if re.fullmatch(r"(?=.*[a-z])[A-Za-z]{2,}[,;:.]?", token)]
    assert not found and not crawl, f"English sentences: {found}; English in the crawl: {crawl}"


# --- the tools' phrasebooks: every sentence a tool says has its Chinese -------------------


def said_in(paths: list[Path]) -> set[str]:
    """Every English sentence given to a phrasebook's say() in these files (literals)."""
    said = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args]
        for call in calls:
            first = call.args[0]
            if ast.unparse(call.func).split(".")[-1] in {"say", "said"} and (
                isinstance(first, ast.Constant) and isinstance(first.value, str)
            ):
                said.add(first.value)
    return said


@pytest.mark.parametrize(
    ("book", "paths", "more"),
    [
        (sidebyside.BOOK, ["shared/tools/sidebyside.py"], "sidebyside"),
        (BENCH_BOOK, ["shared/tools/bench/bench.py", "shared/tools/bench/compare.py"], ""),
    ],
    ids=["diff", "bench"],
)
def test_every_sentence_a_tool_says_has_its_chinese_and_no_other(
    book: Phrasebook, paths: list[str], more: str
) -> None:
    said = said_in([ROOT / path for path in paths])
    if more:  # the legend's words and each pair's why: data, said through say() too
        said |= set(sidebyside.MEANING.values()) | {c.why for c in sidebyside.STAGE1_TO_LATER}
    assert len(said) > 20, "the sentences were not found: has say() been renamed?"
    chinese = book.chinese
    assert not said - chinese.keys(), f"no Chinese for: {sorted(said - chinese.keys())}"
    assert not chinese.keys() - said, f"Chinese for nothing the tool says: {chinese.keys() - said}"
    blanks = [english for english in said if chinese[english].count("{") != english.count("{")]
    assert not blanks, f"a translation lacks a blank of its English: {blanks}"


#: Words the glossary refuses in Chinese, each with the one it chose (shared/GLOSSARY.md),
#: and the text a page may still hold them in (解决 for "fix", as in "what it solves").
REFUSED_WORDS = {"跑出": "逃出", "讲义": "作业包", "解决": "了结"}
STILL_FINE = ("解决了什么",)
#: Chinese text written as UTF-8 and read back as Latin-1 (后续代码 as "åç»­ä»£ç "): two
#: characters of the Latin-1 half that UTF-8's lead and continuation bytes become.
MOJIBAKE = re.compile("[\u00c0-\u00ff][\u0080-\u00bf]")


def test_no_page_holds_a_word_the_glossary_refuses_or_text_read_in_the_wrong_encoding() -> None:
    found = []
    for name in (
        path.relative_to(ROOT).as_posix() for path in pages("*.md", "*.toml", "*.py", "*.json")
    ):
        if name == "shared/GLOSSARY.md" or name == "tests/test_readme.py":
            continue  # where the refused words are named, as refused
        text = (ROOT / name).read_text(encoding="utf-8")
        for fine in STILL_FINE:
            text = text.replace(fine, "")
        found += [
            f"{name}: {word} (say {better})"
            for word, better in REFUSED_WORDS.items()
            if word in text
        ]
        found += [f"{name}: {m[0]!r} (UTF-8 read as Latin-1?)" for m in MOJIBAKE.finditer(text)][:1]
    assert not found, found
