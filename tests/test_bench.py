"""The comparison's tools: the threaded baseline, compare, and the figures' arithmetic.

The baseline is held to the same oracle as the stages (tests/test_crawl.py), so that
the benchmark compares crawlers that do the same work.  The benchmark's figures
themselves are never asserted: they depend on the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_crawl import assert_matches_oracle

from shared.bench import pagecost, threaded
from shared.bench.bench import DEFAULT_JSON, QUICK_JSON, markdown
from shared.bench.compare import DEFAULT_SVG
from shared.bench.load import load, site_paths
from shared.bench.measure import (
    ROOT,
    count_lines,
    in_flight_steps,
    level_bound,
    page_set_difference,
    peak_in_flight,
    posix_only,
)
from shared.bench.svg import Lane, Scale, nice_step, render, step_path
from shared.crawling import Options
from shared.testsite import Site, serve

# --- the threaded baseline against the oracle -------------------------------------------


def test_threaded_gives_the_oracles_pages_and_records(default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    result = threaded.crawl([base_url], Options())
    assert result.stage == "threaded" and not result.interrupted
    assert_matches_oracle(result, site.expected(base_url))


def test_threaded_retries_and_times_out_like_the_stages() -> None:
    """Silence, resets, short bodies, garbage, 20 MB: each a record, in bounded time."""
    site = Site(hostile=True)
    with serve(site) as base_url:
        started = time.monotonic()
        result = threaded.crawl([base_url], Options(timeout=0.5, max_tries=2))
        assert time.monotonic() - started < 20
        assert_matches_oracle(result, site.expected(base_url, max_tries=2))
        silent = result.by_url()[base_url + "hostile/silent"]
        assert silent.tries == 2 and "Timeout" in (silent.error or "")


def test_threaded_never_has_more_than_max_tasks_requests_at_once() -> None:
    site = Site(pages=60, traps=False, latency=0.05)
    with serve(site) as base_url:
        result = threaded.crawl([base_url], Options(max_tasks=4))
        assert site.max_in_flight == 4
        assert result.urls == set(site.expected(base_url))
        assert peak_in_flight(result.to_json(timeline=True)["timeline"]) <= 4


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
    assert ctrl_c_check("shared.bench.threaded")["stage"] == "threaded"


# --- compare, end to end ----------------------------------------------------------------


def test_compare_on_a_tiny_site_gives_four_rows_and_a_picture(tmp_path: Path) -> None:
    svg, rows = tmp_path / "compare.svg", tmp_path / "rows.json"
    argv = [sys.executable, "-m", "shared.bench.compare", "--pages=30", "--latency=0.005"]
    argv += [f"--out={svg}", f"--json={rows}", "--timeout=5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    names = ["stage1_callbacks", "stage2_generators", "stage3_asyncio", "threaded"]
    table = [line.split() for line in done.stdout.splitlines()]
    table = [cells for cells in table if cells and cells[0] in names]
    assert [line[0] for line in table] == names
    assert all(line[2] == "yes" for line in table), done.stdout  # the oracle's page set
    doc = json.loads(rows.read_text())
    assert [row["crawler"] for row in doc["rows"]] == names
    assert all(1 <= row["peak_in_flight"] <= 10 and row["lines"] > 0 for row in doc["rows"])
    assert "--timeout=5" in doc["args"]  # an option compare does not know is passed on
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert all(name in texts for name in names)
    assert len(list(root.iter("{http://www.w3.org/2000/svg}path"))) == 4


def test_compare_and_bench_write_by_default_where_git_ignores() -> None:
    # The committed picture and figures change only when --out or --json names them.
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


def test_page_set_difference() -> None:
    assert page_set_difference({"a", "b"}, ["b", "a"]) == "yes"
    assert page_set_difference({"a", "b", "x"}, {"a", "b", "c", "d"}) == "+1 -2"


def test_count_lines_skips_blank_lines_and_comments(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text('"""Doc\nstring."""\n\n# comment\nx = 1  # counted\n\n    \ny = "#"\n')
    assert count_lines([source]) == 4  # two docstring lines, x and y


def test_step_path_merges_moves_within_one_pixel() -> None:
    x, y = Scale(0.0, 10.0, 0.0, 100.0), Scale(0.0, 10.0, 100.0, 0.0)
    assert step_path([(0.0, 0), (5.0, 10), (10.0, 0)], 10.0, x, y) == (
        "M0.0,100.0H0.0V100.0H50.0V0.0H100.0V100.0H100.0V100.0Z"
    )
    # A thousand steps within one pixel (ten columns of a tenth) give ten, not a thousand.
    crowded = [(0.0001 * i, i % 7) for i in range(1000)]
    assert step_path(crowded, 1.0, x, y).count("H") <= 12


def test_render_is_valid_svg_with_a_lane_each() -> None:
    lanes = [Lane(f"crawler {i}", [(0.0, 0), (0.1, 3), (0.9, 0)], 1.0, "3 pages") for i in range(3)]
    root = ET.fromstring(render(lanes, title="T & <t>", subtitle="s", limit=3))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "T & <t>" in texts and texts.count("3 pages") == 3
    assert nice_step(1.3) == pytest.approx(0.2) and nice_step(8.0) == pytest.approx(1.0)


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
