"""The comparison's tools: the threaded baseline, compare, and the figures' arithmetic.

The baseline is held to the same oracle as the stages (tests/test_crawl.py), so that
the benchmark compares crawlers that do the same work.  The benchmark's figures
themselves are never asserted: they depend on the machine.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared import STAGES
from shared.crawling import BaseCrawler, Options
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle
from shared.tools.bench import (
    bench,
    browsertab,
    compare,
    independent,
    inside,
    measure,
    pagecost,
    server,
    threaded,
)
from shared.tools.bench.bench import (
    COMMITTED_JSON,
    DEFAULT_JSON,
    QUICK_JSON,
    markdown,
    over_floor,
    s2_floor_rows,
)
from shared.tools.bench.compare import (
    DEFAULT_OUT,
    DEFAULT_SVG,
    PICTURES,
    README_OUT,
    build_parser,
    format_table,
    output_dir,
)
from shared.tools.bench.figures import kib_per_fetch, latency_svg, memory_svg, race_svg
from shared.tools.bench.load import load, site_paths
from shared.tools.bench.measure import (
    ROOT,
    SiteOptions,
    count_lines,
    in_flight_steps,
    level_bound,
    memory_measurable,
    page_set_difference,
    peak_in_flight,
    posix_only,
    race_floor,
    site_server,
)
from shared.tools.bench.phases import (
    PhaseStep,
    counts_at,
    has_connect_times,
    peak_queued,
    phase_steps,
)
from shared.tools.bench.svg import Lane, Scale, band_path, column_means, nice_step, render
from shared.tools.instruments import watching
from shared.tools.instruments.timeline import Timeline

# --- the threaded baseline against the oracle -------------------------------------------


def test_threaded_gives_the_oracles_pages_and_records(default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    result = threaded.crawl([base_url], Options())
    assert result.stage == "threaded" and not result.interrupted
    assert_matches_oracle(result, site.expected(base_url))


def test_threaded_never_has_more_than_max_tasks_requests_at_once() -> None:
    site = Site(pages=60, traps=False, latency=0.05)
    timeline = Timeline()
    with serve(site) as base_url, watching(timeline):
        result = threaded.crawl([base_url], Options(max_tasks=4))
        assert site.max_in_flight == 4
        assert result.urls == set(site.expected(base_url))
        assert peak_in_flight(timeline.to_json()["timeline"]) <= 4


def test_threaded_max_pages_and_robots_txt(default_site: tuple[Site, str]) -> None:
    """robots.txt is fetched first, by one thread while the others wait, on top of N pages."""
    site, base_url = default_site
    result = threaded.crawl([base_url], Options(max_pages=7, max_tries=1))
    assert base_url + "robots.txt" in result.urls
    assert len(result.fetches) == 7 + 1
    assert len(site.requests) <= 7 + 1
    assert result.urls <= set(site.expected(base_url, max_tries=1))


def test_threaded_ctrl_c_gives_the_partial_result(
    ctrl_c_check: Callable[[str], dict[str, Any]],
) -> None:
    assert ctrl_c_check("shared.tools.bench.threaded")["stage"] == "threaded"


# --- the phases every crawler records ----------------------------------------------------


@pytest.mark.parametrize("module", [*STAGES.values(), "shared.tools.bench.threaded"])
def test_a_refused_connect_is_no_connection(module: str) -> None:
    """A try the server refused never had its connection, in every crawler: null."""
    crawl = importlib.import_module(module).crawl
    with socket.socket() as bound:  # bound and not listening: every connect is refused
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}/"
        timeline = Timeline()
        with watching(timeline):
            result = crawl([url], Options(max_tries=2, ignore_robots=True))
    assert [(stat.url, stat.tries) for stat in result.fetches] == [(url, 2)]
    assert result.fetches[0].error, "a refused connect is an error"
    assert timeline.phases == [(url, 0.0, None)]


@pytest.mark.parametrize(
    "module",
    [*STAGES.values(), "shared.tools.bench.threaded"],
)
def test_every_crawler_records_when_each_fetch_was_queued_and_connected(module: str) -> None:
    """Queued, begun, connected, ended, in that order, for every page; the JSON says so too."""
    crawl = importlib.import_module(module).crawl
    site = Site(pages=30, traps=False, latency=0.02)
    timeline = Timeline()
    with serve(site) as base_url, watching(timeline):
        result = crawl([base_url], Options(max_tasks=3, ignore_robots=True))
    assert [url for url, _, _ in timeline.timeline] == [stat.url for stat in result.fetches]
    assert [entry[0] for entry in timeline.phases] == [entry[0] for entry in timeline.timeline]
    for (url, start, end), (_, queued, connected) in zip(
        timeline.timeline, timeline.phases, strict=True
    ):
        assert connected is not None, url
        assert queued <= start <= connected <= end, url
    assert timeline.phases[0][1] == 0.0  # the root, queued when the crawl began
    # Three at a time: the root's links wait in the queue, and are not counted in flight.
    steps = phase_steps(timeline.to_json()["timeline"], timeline.to_json()["phases"])
    assert peak_queued(steps) > 0 and max(step.in_flight for step in steps) <= 3


# --- compare, end to end ----------------------------------------------------------------


def test_compare_on_a_tiny_site_gives_four_rows_and_three_pictures(tmp_path: Path) -> None:
    rows = tmp_path / "rows.json"
    argv = [sys.executable, "-m", "shared.tools.bench.compare", "--pages=30", "--latency=0.005"]
    argv += [f"--out={tmp_path}", f"--json={rows}", "--timeout=5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    names = ["stage1_callbacks", "stage2_generators", "stage3_asyncio", "threaded"]
    table = [line.split() for line in done.stdout.splitlines()]
    header = next(cells for cells in table if cells and cells[0] == "crawler")
    assert " ".join(header).count("peak queued peak in flight KiB/fetch") == 1
    table = [cells for cells in table if cells and cells[0] in names]
    assert [line[0] for line in table] == names
    assert all(line[2] == "yes" for line in table), done.stdout  # the oracle's page set
    doc = json.loads(rows.read_text())
    assert [row["crawler"] for row in doc["rows"]] == names
    assert all(1 <= row["peak_in_flight"] <= 10 and row["lines"] > 0 for row in doc["rows"])
    # 30 pages and the traps, ten at a time: the root's links alone fill the queue for a while.
    assert all(row["peak_queued"] > 0 for row in doc["rows"])
    committed = kib_per_fetch(json.loads(COMMITTED_JSON.read_text()))
    assert [row["kib_per_fetch"] for row in doc["rows"]] == [committed[name] for name in names]
    assert "--timeout=5" in doc["args"]  # an option compare does not know is passed on
    root = ET.parse(tmp_path / "compare.svg").getroot()
    assert root.tag == SVG + "svg"
    texts = [t.text for t in root.iter(SVG + "text")]
    assert all(name in texts for name in names)
    # Per lane: everything in flight, the reading part over it, and the queue below.
    assert len(list(root.iter(SVG + "path"))) == 3 * 4
    # A bar per crawler, but in the race only for those that ran it (one killed is named).
    doc = json.loads(COMMITTED_JSON.read_text())
    size = max(doc["S3"], key=lambda key: int(key) if key.isdigit() else 0)
    raced = [name for name, entry in doc["S3"][size]["results"].items() if max(entry["seconds"])]
    wanted = {"memory.svg": 4, "race.svg": len(raced), "latency.svg": 4}
    for picture in PICTURES[1:]:
        assert len(bars_of(ET.parse(tmp_path / picture).getroot())) == wanted[picture]


def test_compare_runs_where_there_is_no_fork_and_leaves_memory_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Windows, faked: no os.fork, no resource module.  compare still crawls and draws."""
    assert memory_measurable()  # here, before the fake
    monkeypatch.delattr(os, "fork")
    monkeypatch.setitem(sys.modules, "resource", None)  # `import resource` fails
    # Its launcher forks: were it still used, every crawl would fail without it.
    monkeypatch.setattr(measure, "RUSAGE", tmp_path / "no-launcher-on-windows.py")
    assert not memory_measurable()
    server.raise_fd_limit()  # the site's server starts too: it has no limit to lift
    status = compare.main(["--pages=30", "--latency=0.005", f"--out={tmp_path}", "--no-pin"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "Peak memory is left out" in out and "Windows" in out
    header = next(line for line in out.splitlines() if line.startswith("crawler"))
    assert "peak in flight" in header and "RSS" not in header
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == ["threaded"]]
    assert rows and rows[0][2] == "yes"  # the oracle's page set, crawled all the same
    assert (tmp_path / "compare.svg").is_file()


def test_compare_writes_by_default_where_git_ignores() -> None:
    """Pictures go to out/ unless told otherwise; --readme names the README's folder."""
    assert DEFAULT_OUT == ROOT / "out" and DEFAULT_SVG.parent == DEFAULT_OUT
    parser = build_parser()
    assert output_dir(parser, parser.parse_known_args([])[0]) == ROOT / "out"
    readme = parser.parse_known_args(["--readme"])[0]
    assert output_dir(parser, readme) == README_OUT == ROOT / "shared" / "tools" / "bench"
    elsewhere = parser.parse_known_args(["--out", "/tmp/pictures"])[0]
    assert output_dir(parser, elsewhere) == Path("/tmp/pictures")
    with pytest.raises(SystemExit):  # --out used to name the picture itself
        output_dir(parser, parser.parse_known_args(["--out", "x/compare.svg"])[0])
    with pytest.raises(SystemExit):  # one place or the other
        parser.parse_known_args(["--readme", "--out", "x"])


def test_compare_and_bench_write_by_default_where_git_ignores() -> None:
    # The committed pictures and figures change only when --readme or --json names them.
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/out/" in ignored
    for path in (DEFAULT_SVG, DEFAULT_JSON, QUICK_JSON):
        assert path.parent == ROOT / "out", path


def test_measuring_refuses_clearly_where_there_is_no_fork(
    capsys: pytest.CaptureFixture[str],
) -> None:
    posix_only("bench", "posix")  # Linux and macOS: nothing to say
    with pytest.raises(SystemExit) as stopped:
        posix_only("bench", "nt")  # Windows
    assert stopped.value.code == 2
    assert "bench measures with fork()" in capsys.readouterr().err


# --- the arithmetic, on hand-made inputs --------------------------------------------------


def test_in_flight_steps_count_overlaps() -> None:
    timeline = [["a", 0.0, 1.0], ["b", 0.5, 2.0], ["c", 0.6, 0.7]]
    assert in_flight_steps(timeline) == [
        (0.0, 1),
        (0.5, 2),
        (0.6, 3),
        (0.7, 2),
        (1.0, 1),
        (2.0, 0),
    ]
    assert peak_in_flight(timeline) == 3


def test_a_fetch_ending_as_another_begins_never_overlaps_it() -> None:
    timeline = [["a", 0.0, 1.0], ["b", 1.0, 2.0], ["c", 2.0, 3.0]]
    assert peak_in_flight(timeline) == 1
    assert in_flight_steps([]) == [(0.0, 0)]


def test_level_bound_rounds_each_level_up_to_whole_rounds() -> None:
    # 1, 10 and 100 pages fit one round of 100 each; 1,000 take 10; 889 take 9.
    assert level_bound([1, 10, 100, 1000, 889], 100, 0.05) == pytest.approx(22 * 0.05)
    assert level_bound([1, 5], 1, 0.1) == pytest.approx(0.6)
    assert level_bound([], 10, 1.0) == 0


def test_the_races_floor_adds_the_time_the_site_takes_to_accept_every_connection() -> None:
    """10,000 fetches of 2 s on a site that accepts 7,000 connections a second: 3.43 s."""
    assert race_floor(2.0, 10_000, 7_000) == pytest.approx(2.0 + 10_000 / 7_000)
    assert race_floor(0.5, 0, 7_000) == 0.5  # nothing to connect: the delay alone


def test_the_independent_harness_site_is_a_tree_and_every_crawler_fetches_all_of_it(
    tmp_path: Path,
) -> None:
    """Its site's pages, found from /p/0 by following links, are --pages; every run fetches them.

    The harness refuses a run in which a crawler missed a page (SystemExit), so that its
    figures compare crawlers that did the same work.
    """
    found, todo = {"/p/0"}, ["/p/0"]
    while todo:
        body = independent.page(todo.pop(), 123, 0)
        assert body is not None
        new = set(independent.HREF.findall(body[0].decode())) - found
        found |= new
        todo += new
    assert found == {f"/p/{n}" for n in range(123)}
    assert independent.page("/p/123", 123, 0) is None
    out = tmp_path / "figures.json"
    argv = ["--pages=45", "--latency=0", "--race=30", "--race-delay=0.05", "--runs=1"]
    assert independent.main([*argv, "--no-pin", f"--json={out}"]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert all(len(seconds) == 1 for seconds in doc["seconds"].values())
    assert set(doc["pages_per_s"]) == {"stage3_asyncio", "threads"}
    # Stage 3's race target is against the plain aiohttp session, its library's floor.
    [stage3], [plain] = doc["seconds"]["race stage3_asyncio"], doc["seconds"]["race plain aiohttp"]
    assert doc["over_aiohttp"] == pytest.approx(stage3 / plain, abs=1e-3)


def test_the_race_marks_stages_1_and_2_against_the_site_s_floor_and_not_stage_3() -> None:
    """Stages 1 and 2 race within 1.5x of the site's floor; stage 3's target is against a
    plain aiohttp session, which the benchmark does not race: its cell has no mark."""
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    part = doc["S3"]["10000"]["results"]
    floor = race_floor(doc["S3"]["delay"], 10_000, doc["S0"]["close"]["median"])
    for name, over in [("stage1_callbacks", 1.45), ("stage2_generators", 1.55)]:
        part[name]["seconds"] = [floor * over]
    part["stage3_asyncio"]["seconds"] = [floor * 1.1]
    [row] = [
        line
        for line in markdown(doc).splitlines()
        if line.startswith("| S3 seconds / the race") and "10,000" in line
    ]
    assert row.split(" | ")[1:4] == ["1.45x ✓", "1.55x ✗", "1.10x"], row
    assert "stage 3 within 1.2x of the floor its library sets" in markdown(doc)


def test_page_set_difference() -> None:
    assert page_set_difference({"a", "b"}, ["b", "a"]) == "yes"
    assert page_set_difference({"a", "b", "x"}, {"a", "b", "c", "d"}) == "+1 -2"


def test_count_lines_skips_blank_lines_and_comments(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('"""Doc\nstring."""\n\n# comment\nx = 1  # counted\n\n    \ny = "#"\n')
    assert count_lines([source]) == 4  # two docstring lines, x and y


def test_column_means_weigh_each_value_by_how_long_it_lasted() -> None:
    # 0 until 5 s, then 10: one-second columns see 0 five times, then 10 five times.
    assert column_means([(0.0, 0), (5.0, 10)], 10.0, 1.0) == [0.0] * 5 + [10.0] * 5
    # 10 for a quarter of the first column, nothing after: 2.5, then 0.
    assert column_means([(0.0, 0), (0.5, 10), (0.75, 0)], 2.0, 1.0) == [2.5, 0.0]
    # A dip of ten microseconds in a column of half a second barely moves it...
    dip = column_means([(0.0, 10), (0.3, 9), (0.30001, 10)], 1.0, 0.5)
    assert dip[0] == pytest.approx(10 - 0.00001 / 0.5) and dip[1] == 10
    # ...and a last column cut short by the end is averaged over what it has.
    assert column_means([(0.0, 4)], 2.5, 1.0) == [4.0, 4.0, 4.0]
    assert column_means([(0.0, 4)], 0.0, 1.0) == []


def test_band_path_draws_a_flat_top_per_change_of_level() -> None:
    x, y = Scale(0.0, 4.0, 0.0, 40.0), Scale(0.0, 10.0, 100.0, 0.0)
    path = band_path([0.0, 10.0, 10.0, 5.0], 1.0, x, y)
    assert path == "M0.0,100.0H0.0V100.0H10.0V0.0H30.0V50.0H40.0V100.0Z"
    # A thousand columns of one level are one stroke, not a thousand.
    assert band_path([3.0] * 1000, 0.001, x, y).count("V") == 2


def lane(name: str, divided: bool = True) -> Lane:
    """A lane of three fetches: queued, then connecting, then reading."""
    steps = phase_steps(HAND_MADE, HAND_MADE_PHASES if divided else [])
    return Lane(name, steps, 1.0, "3 pages", divided)


def test_render_is_valid_svg_with_a_lane_each_and_a_caption() -> None:
    lanes = [lane(f"crawler {i}") for i in range(3)]
    text = render(lanes, title="T & <t>", subtitle="s", caption="Read: this.", limit=3)
    root = ET.fromstring(text)
    texts = [t.text or "" for t in root.iter(SVG + "text")]
    assert "T & <t>" in texts and texts.count("3 pages") == 3
    assert any(
        line.startswith("Read: this. Each column of pixels is the average") for line in texts
    )
    assert {"reading", "connecting", "queued, below the line", "--max-tasks 3"} <= set(texts)
    assert "in flight, undivided" not in texts
    assert len(list(root.iter(SVG + "path"))) == 3 * 3  # in flight, reading, queued
    # A crawl that recorded no connect times is not divided: no reading band, a legend for it.
    root = ET.fromstring(render([lane("old", divided=False)], title="T", subtitle="s"))
    assert "in flight, undivided" in [t.text for t in root.iter(SVG + "text")]
    assert len(list(root.iter(SVG + "path"))) == 2
    assert nice_step(1.3) == pytest.approx(0.2) and nice_step(8.0) == pytest.approx(1.0)


# --- the phases of a fetch -------------------------------------------------------------------

# Three fetches, ten at a time at most: "a" is the root, queued at 0 and begun at once;
# "b" and "c" are found at 0.2, when "a" ends.  "b" begins at once, "c" waits until 0.5.
HAND_MADE = [["a", 0.0, 0.2], ["b", 0.2, 0.6], ["c", 0.5, 0.9]]
HAND_MADE_PHASES = [["a", 0.0, 0.05], ["b", 0.2, 0.3], ["c", 0.2, 0.55]]


def test_phase_counts_at_chosen_instants() -> None:
    steps = phase_steps(HAND_MADE, HAND_MADE_PHASES)

    def at(when: float) -> tuple[int, int, int]:
        step = counts_at(steps, when)
        return step.queued, step.connecting, step.reading

    assert at(0.0) == (0, 1, 0)  # a: queued and begun at the same instant, never queued
    assert at(0.1) == (0, 0, 1)  # a: connected at 0.05
    assert at(0.2) == (1, 1, 0)  # a ended; b begun, c found and waiting
    assert at(0.4) == (1, 0, 1)  # b connected at 0.3; c still queued: not in flight
    assert at(0.52) == (0, 1, 1)  # c begun at 0.5
    assert at(0.58) == (0, 0, 2)
    assert at(0.7) == (0, 0, 1)  # b ended
    assert at(0.9) == (0, 0, 0)
    assert peak_queued(steps) == 1
    assert max(step.in_flight for step in steps) == peak_in_flight(HAND_MADE) == 2
    assert has_connect_times(HAND_MADE_PHASES) and not has_connect_times([["a", 0.0, None]])


def test_a_fetch_that_never_connected_is_connecting_throughout() -> None:
    # No phases at all (a JSON from before they existed): begun at its start, never queued.
    assert phase_steps([["a", 0.1, 0.3]]) == [
        PhaseStep(0.0, 0, 0, 0),
        PhaseStep(0.1, 0, 1, 0),
        PhaseStep(0.3, 0, 0, 0),
    ]
    # Every try refused: queued, then connecting until its end.
    steps = phase_steps([["a", 0.1, 0.3]], [["a", 0.0, None]])
    assert [(s.queued, s.connecting, s.reading) for s in steps] == [(1, 0, 0), (0, 1, 0), (0, 0, 0)]


# --- the benchmark's pictures ------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def bars_of(root: ET.Element) -> dict[str, float]:
    """The bars of a picture: crawler name -> the figure it stands for."""
    return {
        rect.attrib["data-crawler"]: float(rect.attrib["data-value"])
        for rect in root.iter(SVG + "rect")
        if "data-crawler" in rect.attrib
    }


def s3_doc(per_fetch: dict[str, float], seconds: dict[str, float]) -> dict[str, Any]:
    """A results document with only what the pictures read: S3 at 50 and at 100."""

    def part(size: int) -> dict[str, Any]:
        results = {
            name: {
                "kib_per_fetch": [kib, kib],
                "summary": {"median": kib, "min": kib - 0.1, "max": kib + 0.1},
                "seconds": [seconds[name]],
                "rss_kib": [30000],
                "complete": [True],
                "lost": [0],
            }
            for name, kib in per_fetch.items()
        }
        return {"fetches": size + 1, "results": results}

    return {
        "machine": {"cpu": "CPU", "cores": 2},
        "S3": {"delay": 1.5, "50": part(50), "100": part(100)},
    }


def test_memory_and_race_pictures_have_a_bar_per_crawler_with_its_figure() -> None:
    per_fetch = {"stage1_callbacks": 1.25, "threaded": 20.0, "stage3_asyncio": 10.0}
    per_fetch["stage2_generators"] = 4.0
    seconds = {"stage1_callbacks": 3.0, "stage2_generators": 4.5}
    seconds |= {"stage3_asyncio": 6.0, "threaded": 9.0}
    doc = s3_doc(per_fetch, seconds)
    memory = ET.fromstring(memory_svg(doc, "results.json"))
    assert bars_of(memory) == per_fetch
    # Threads first, then the stages in order, whatever the order of the file.
    assert list(bars_of(memory)) == ["threaded", *sorted(set(per_fetch) - {"threaded"})]
    texts = [t.text or "" for t in memory.iter(SVG + "text")]
    assert {"20.0 KiB", "1.2 KiB", "4.0 KiB", "10.0 KiB"} <= set(texts)
    assert {"threads", "callbacks", "generator coroutines", "asyncio + aiohttp"} <= set(texts)
    assert "16x the memory of a callback's, 5x" in " ".join(texts)
    assert any("KiB" in line and "per fetch" in line for line in texts)  # the axis and its unit
    race = ET.fromstring(race_svg(doc, "results.json"))
    assert bars_of(race) == seconds
    texts = [t.text or "" for t in race.iter(SVG + "text")]
    assert {"3.0 s", "4.5 s", "6.0 s", "9.0 s"} <= set(texts)
    assert "The race: 100 slow fetches at once" in texts  # the largest size measured
    assert "callbacks finished first, in 3.0 s, threads last, in 9.0 s" in " ".join(texts)
    with pytest.raises(ValueError, match="no S3"):
        memory_svg({"S3": {"5000": {"skipped": "file-descriptor limit 1024"}}})


def test_a_crawler_that_never_ran_the_race_is_named_not_drawn() -> None:
    """A crawler killed before its race (0 s, none answered) is no bar of 0 s, and no x0."""
    kib = {"stage1_callbacks": 1.0, "threaded": 20.0}
    doc = s3_doc(kib, {"stage1_callbacks": 3.0, "threaded": 9.0})
    doc["S3"]["100"]["results"]["threaded"].update(seconds=[0.0], complete=[False], lost=[101])
    root = ET.fromstring(race_svg(doc))
    assert set(bars_of(root)) == {"stage1_callbacks"}
    words = " ".join(" ".join(t.text or "" for t in root.iter(SVG + "text")).split())
    assert "Not drawn: threaded, which answered none." in words


def test_the_latency_picture_draws_each_crawl_against_the_level_bound() -> None:
    elapsed = {"threaded": [1.2, 1.5, 1.1], "stage1_callbacks": [1.25, None, 1.2]}
    elapsed["stage3_asyncio"] = [None, None, None]  # every run failed: no bar, not a 0
    results: dict[str, Any] = {
        name: {"elapsed_s": times, "crawl_cpu_s": [0.5, 0.6, 0.7]}
        for name, times in elapsed.items()
    }
    del results["stage1_callbacks"]["crawl_cpu_s"]  # results from before the CPU was kept
    doc = {
        "machine": {"cpu": "CPU", "cores": 2},
        "S2": {"levels": [1, 10, 89], "max_tasks": 10, "latency": 0.05, "level_bound_s": 0.6},
    }
    doc["S2"]["results"] = results
    picture = ET.fromstring(latency_svg(doc, "results.json"))
    # Medians of the runs that finished; threads first, then the stages in order.
    assert bars_of(picture) == {"threaded": 1.2, "stage1_callbacks": 1.225}
    texts = " ".join(t.text or "" for t in picture.iter(SVG + "text"))
    assert "the level bound: 0.60 s" in texts and "level bound, 12 rounds of 50 ms" in texts
    assert "BFS levels of 1, 10 and 89 pages, --max-tasks 10 at a time" in texts
    assert "2.00x the bound; CPU 0.60 s" in texts
    assert "2.04x the bound" in texts and "2.04x the bound;" not in texts
    (line,) = [el for el in picture.iter(SVG + "line") if el.get("stroke-dasharray")]
    assert line.get("x1") == line.get("x2")  # the bound: one dashed upright line
    with pytest.raises(ValueError, match="no S2"):
        latency_svg({"S3": {}})
    doc["S2"]["results"] = {"stage3_asyncio": results["stage3_asyncio"]}
    with pytest.raises(ValueError, match="no crawl of S2 finished"):
        latency_svg(doc)


def test_the_readmes_pictures_are_drawn_from_the_committed_results() -> None:
    """`nox -s compare -- --readme` was run since results.json last changed."""
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    kib = kib_per_fetch(doc)
    memory = (README_OUT / "memory.svg").read_text(encoding="utf-8")
    assert memory == memory_svg(doc)
    assert bars_of(ET.fromstring(memory)) == kib
    race = (README_OUT / "race.svg").read_text(encoding="utf-8")
    assert race == race_svg(doc)
    latency = (README_OUT / "latency.svg").read_text(encoding="utf-8")
    assert latency == latency_svg(doc)


def test_the_bench_page_shows_the_pictures_and_the_command_that_redraws_them() -> None:
    page = (README_OUT / "README.md").read_text(encoding="utf-8")
    for picture in PICTURES:
        assert f"]({picture})" in page, picture
    assert "nox -s compare -- --readme" in page
    assert '"phases"' in (ROOT / "shared" / "CLI.md").read_text("utf-8")  # --timeline's JSON


def test_the_table_shows_a_dash_without_benchmark_figures() -> None:
    from shared.tools.bench.compare import Row

    row = Row("threaded", 3, "yes", 0.5, 6.0, 2, 10, None, 28.0, 100)
    line = format_table([row]).splitlines()[2].split()
    assert line[5:8] == ["2", "10", "-"]


def test_load_client_counts_answers_both_ways() -> None:
    site = Site(pages=20, traps=False)
    with serve(site) as base_url:
        for keep_alive in (False, True):
            got = load(base_url, site_paths(20), keep_alive=keep_alive, seconds=0.3, connections=4)
            assert int(got["requests"]) > 0 and got["errors"] == 0
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        load("http://localhost:80/", ["/"], keep_alive=False)


def test_markdown_renders_a_results_document() -> None:
    names = ["stage1_callbacks", "threaded"]

    def stats(median: float) -> dict[str, Any]:
        return {"median": median, "min": median * 0.9, "max": median * 1.1}

    wide = {
        name: {
            "rss_kib": [30000],
            "baseline_rss_kib": [20000],
            "peak_in_flight": [5000],
            "kib_per_fetch": [2.0],
            "seconds": [2.5],
            "complete": [True],
            "lost": [0],
            "summary": {"median": 2.0, "min": 2.0, "max": 2.0},
        }
        for name in names
    }
    doc = {
        "machine": {
            "cpu": "CPU",
            "cores": 2,
            "implementation": "CPython",
            "python": "3.11",
            "system": "Linux",
            "date": "today",
        },
        "plan": {"runs": 5, "quick": False},
        "pinned": True,
        "crawlers": names,
        "S0": {"site": {"pages": 2000}, "close": stats(2000), "keep_alive": stats(5000)},
        "S1": {
            "pages": 2000,
            "max_tasks": 100,
            "results": {n: {**stats(900), "cpu_s": [2.5], "records": [2000]} for n in names},
        },
        "S2": {
            "latency": 0.05,
            "level_bound_s": 1.1,
            "results": {
                "stage1_callbacks": {**stats(1.02), "cpu_s": [3.0, 3.2], "records": [2000, 2000]},
                "threaded": stats(1.1),  # a results file from before S2 kept its CPU time
            },
        },
        "S3": {
            "baseline_tasks": 10,
            "5000": {"fetches": 5001, "results": wide},
            "10000": {"skipped": "file-descriptor limit 1024"},
        },
    }
    text = markdown(doc)
    assert "The run took" not in text  # a document that does not say how long it took
    assert "| scenario | stage1_callbacks | threaded |" in text
    assert "900 (810-990) ✓" in text  # as fast as the baseline: the target is met
    assert "1.02x (0.92-1.12) ✓" in text
    assert "| 1.25 | 1.25 |" in text  # CPU per page: 2.5 s for 2,000 pages
    assert "| S2 crawler CPU, ms per page (whole process, start-up included) | 1.55 | - |" in text
    assert "The run took 7 minutes." in markdown({**doc, "seconds": 430.0})
    assert "The run took 52 seconds." in markdown({**doc, "seconds": 52.4})
    assert "skipped: file-descriptor limit 1024" in text


def browser_tab_part() -> dict[str, Any]:
    """An S4 of two runs, as browsertab.measure() writes it."""

    def figure(*values: float) -> dict[str, Any]:
        return {
            "values": list(values),
            "median": sum(values) / 2,
            "min": min(values),
            "max": max(values),
        }

    return {
        "runs": 2,
        "browser": {"name": "Chromium", "version": "156.0", "headless": True},
        "window": [1280, 720],
        "exercise": "s2-future",
        "site": {"files": 28, "bytes": 15_481_195},
        "first_files": figure(30, 30),
        "first_bytes": figure(15_484_431, 15_484_431),
        "ready_cold_s": figure(2.8, 3.4),
        "ready_warm_s": figure(2.5, 2.7),
        "reload_bytes": figure(0, 0),
        "check_cold_s": figure(0.55, 0.65),
        "check_warm_s": figure(0.3, 0.32),
    }


def test_markdown_renders_s4_after_the_table_and_a_skipped_s4_says_why() -> None:
    """S4 is a paragraph of its own after the crawlers' table, or the only one in a file
    that --browser made; a file without S4 renders as it did (test_readme holds that)."""
    doc = json.loads(COMMITTED_JSON.read_text(encoding="utf-8"))
    doc.pop("S4", None)  # the committed file's own S4 is test_readme's to check
    part = browser_tab_part()
    alone = markdown({"S4": part})
    assert markdown({**doc, "S4": part}) == markdown(doc) + "\n" + alone
    assert alone.startswith("S4, the browser tab (Chromium 156.0, headless, 1280x720")
    assert "2 run(s)" in alone and "measured on" not in alone  # the document's machine
    for said in (
        "the site is 15.5 MB in 28 files",
        "a first visit fetched 15.5 MB from the server in 30 responses",
        "ready to check 3.1 s (2.8-3.4) after the page was asked for",
        "on a reload, with the site kept by the browser and 0 kB fetched, 2.6 s (2.5-2.7).",
        "A check of s2-future's fresh files took 0.60 s (0.55-0.65) the first time",
        "and 0.31 s (0.30-0.32) the next.",
    ):
        assert said in alone, said
    machine = {"cpu": "CPU", "cores": 2, "system": "Linux", "date": "today"}
    assert "measured on CPU, 2 cores, Linux, today" in markdown(
        {"S4": {**part, "machine": machine}}
    )
    skipped = markdown({**doc, "S4": {"skipped": "no chromium or chromedriver on PATH"}})
    assert skipped.endswith(
        "\nS4, the browser tab: skipped: no chromium or chromedriver on PATH.\n"
    )


def test_browser_measures_s4_alone_and_keeps_the_files_other_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--browser adds S4, with its own machine, to the results it finds; a skipped S4
    leaves the file as it was, so committed figures are never replaced by a reason."""
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"S0": "kept", "S4": "older"}), encoding="utf-8")
    asked = []

    def measured(runs: int, **_: Any) -> dict[str, Any]:
        asked.append(runs)
        return browser_tab_part()

    monkeypatch.setattr(browsertab, "measure", measured)
    assert bench.main(["--browser", "--quick", "--json", str(results)]) == 0
    doc = json.loads(results.read_text(encoding="utf-8"))
    assert asked == [1] and doc["S0"] == "kept"  # --quick: one run
    assert doc["S4"]["first_files"] == browser_tab_part()["first_files"]
    assert "date" in doc["S4"]["machine"]
    assert capsys.readouterr().out.startswith("S4, the browser tab (")
    monkeypatch.setattr(browsertab, "measure", lambda runs, **_: {"skipped": "no chromium"})
    before = results.read_text(encoding="utf-8")
    assert bench.main(["--browser", "--json", str(results)]) == 1
    assert results.read_text(encoding="utf-8") == before
    assert "S4: skipped, no chromium" in capsys.readouterr().err


# --- pagecost: the shared per-page path, measured offline ---------------------------------


def test_pagecost_records_every_fetched_page_as_the_oracle_says() -> None:
    # The tool measures record_response on pages it fetched once; those records must be
    # the oracle's, or the figures would be those of a crawler doing other work.
    site = Site()
    corpus = pagecost.fetch_site(site)
    expected = site.expected(corpus.root, ignore_robots=True)
    assert {page.url for page in corpus.pages} == {
        url for url, record in expected.items() if record.status is not None
    }
    run = pagecost.RecordPass(corpus)
    run.setup()
    run()
    assert run.crawler is not None
    for stat in run.crawler.done:
        want = expected[stat.url]
        got = (stat.status, stat.next_url, stat.content_type, stat.encoding, stat.num_urls)
        assert got == (want.status, want.next_url, want.content_type, want.encoding, want.num_urls)
    assert len(run.crawler.done) == len(corpus.pages)


def test_pagecost_reports_each_part_and_a_profile() -> None:
    corpus = pagecost.fetch_site(Site(pages=40, fanout=4, traps=False))
    parts = pagecost.measure(corpus, repeat=1)
    assert list(parts) == list(pagecost.PARTS)
    assert parts["whole"] > 0 and parts["extract"] > 0
    assert all(value >= 0 for value in parts.values())
    rows = pagecost.profile(corpus, top=8)
    assert len(rows) == 8
    assert [row.own_us for row in rows] == sorted((row.own_us for row in rows), reverse=True)
    assert all(f"| {label} |" in pagecost.table(parts, 1) for label in pagecost.PARTS.values())
    assert all(f"| `{row.function}` |" in pagecost.profile_table(rows) for row in rows)
    # Link finding by page size: a figure per kind and size, on pages of that very size.
    assert len(pagecost.page_of("ordinary", 4096)) == 4096
    costs = pagecost.by_size(repeat=1, sizes_kib=(1, 4))
    assert list(costs) == list(pagecost.PAGE_KINDS)
    assert all(len(values) == 2 and min(values) > 0 for values in costs.values())
    assert "| 4 KiB |" in pagecost.size_table(costs, (1, 4))


# --- inside: one crawler looked into --------------------------------------------------------


def test_inside_levels_are_the_oracles_and_each_fetch_is_one_new_connection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The levels tool finds each URL's level from the records that queued it: its counts
    # must be the site's own breadth-first levels, or its per-level figures mean nothing.
    site = SiteOptions(pages=120, fanout=10, traps=False, latency=0.01)
    crawl = inside.crawl_function("stage1_callbacks")
    per_level = inside.levels(crawl, site.pages, max_tasks=20, latency=site.latency)
    with site_server(site) as server:
        want = site.site().levels(server.url, ignore_robots=True)
    assert [int(per_level[level]["end"]) for level in sorted(per_level)] == want
    assert all(entry["connect"] == entry["end"] for entry in per_level.values())
    assert all(0 <= entry["first"] <= entry["last"] for entry in per_level.values())
    assert "level bound" in capsys.readouterr().out


def test_s2_floor_is_the_level_bound_or_the_crawls_own_cpu_whichever_is_larger() -> None:
    # Below the bound the CPU changes nothing; above it, the CPU is the floor.
    assert over_floor([1.2, 1.5, None, 1.0], [0.5, 1.4, 0.3, None], 1.1) == [
        round(1.2 / 1.1, 4),
        round(1.5 / 1.4, 4),
        None,
        None,
    ]
    entry = {"crawl_cpu_s": [0.5, 1.4], "over_floor": over_floor([1.2, 1.5], [0.5, 1.4], 1.1)}
    rows = s2_floor_rows({"results": {"a": entry, "b": entry}}, ["a", "b"])
    assert rows[0].endswith("| 0.95 | 0.95 |")  # the median of 0.5 and 1.4 s
    assert "| 1.08x (1.07-1.09) |" in rows[1]
    # A results file from before the crawls noted their CPU: no such rows.
    assert s2_floor_rows({"results": {"a": {"over_floor": []}}}, ["a"]) == []


def test_timeline_notes_the_cpu_a_crawl_spent() -> None:
    timeline = Timeline()
    crawler = BaseCrawler(["http://h/"], Options(ignore_robots=True))
    timeline.crawl_started(crawler)
    spent = time.process_time() + 0.05
    while time.process_time() < spent:  # the crawl's own work, as far as the clock can tell
        pass
    timeline.crawl_finished(crawler.result())
    assert 0.05 <= timeline.to_json()["cpu_s"] < 5


def test_inside_memory_weighs_fetches_while_they_all_wait(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Looked at too early (before the fetches began) it would find next to nothing per
    # fetch; divided wrongly, far too much.  A waiting fetch of stage 1 is about 1.2 KB.
    crawl = inside.crawl_function("stage1_callbacks")
    waiting, peak = inside.memory(crawl, fetches=200, delay=3.0, top=5)
    assert 600 < waiting < 4000
    assert peak >= waiting * 0.9
    out = capsys.readouterr().out
    assert "201 of 201 answered" in out and "stage1_callbacks: crawler.py" in out


def test_pagecost_prints_the_robots_check_cost_on_1_kib_and_500_kib() -> None:
    """What `nox -s bench` prints after its table: µs per URL at each robots.txt size."""
    costs = pagecost.robots_cost(repeat=1)
    assert list(costs) == [1024, 500 * 1024] and all(us > 0 for us in costs.values())
    table = pagecost.robots_table(costs).splitlines()
    assert table[0].endswith("| 1 KiB | 500 KiB |") and len(table) == 3
