"""The one suite every stage must pass: same pages, same records, same options.

Each test takes the ``stage`` fixture, so it runs once per stage in
``tests/conftest.py``'s STAGES.  The right answer always comes from the test site's
own oracle (``Site.expected``), never from another crawler's output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import ModuleType
from typing import Any

import pytest

from shared.crawling import Options
from shared.report import CrawlResult, FetchStatistic
from shared.testsite import Expected, Site, serve


def fields(stat: FetchStatistic) -> tuple[Any, ...]:
    """What a record must agree on with the oracle (num_new_urls depends on order)."""
    return (
        stat.status,
        stat.next_url,
        stat.content_type,
        stat.encoding,
        stat.num_urls,
        stat.tries,
        stat.error is not None,
    )


def expected_fields(exp: Expected) -> tuple[Any, ...]:
    return (
        exp.status,
        exp.next_url,
        exp.content_type,
        exp.encoding,
        exp.num_urls,
        exp.tries,
        exp.error,
    )


def assert_matches_oracle(result: CrawlResult, expected: dict[str, Expected]) -> None:
    """The page set equals the oracle's, and each record agrees with it field by field."""
    assert len(result.fetches) == len(result.urls), "a URL was recorded twice"
    missing, extra = set(expected) - result.urls, result.urls - set(expected)
    assert not missing and not extra, f"missing {sorted(missing)}, extra {sorted(extra)}"
    wrong = {
        url: (fields(stat), expected_fields(expected[url]))
        for url, stat in result.by_url().items()
        if fields(stat) != expected_fields(expected[url])
    }
    assert not wrong, "records differ from the oracle (got, expected):\n" + "\n".join(
        f"{url}: {got} != {exp}" for url, (got, exp) in sorted(wrong.items())
    )


def test_default_site_gives_the_oracles_pages_and_records(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options())
    assert result.stage == stage.__name__
    assert not result.interrupted
    assert_matches_oracle(result, site.expected(base_url))


def test_a_5000_page_site_gives_the_oracles_pages(stage: ModuleType) -> None:
    site = Site(pages=5000, traps=False)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tasks=20))
        assert_matches_oracle(result, site.expected(base_url))


def test_each_url_is_requested_once_per_try(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    """Redirects that join on one target, duplicate links, cycles: nothing fetched twice."""
    site, base_url = default_site
    stage.crawl([base_url], Options())
    expected = site.expected(base_url)
    requested = {base_url.rstrip("/") + path: n for path, n in site.requests.items()}
    assert requested == {url: exp.tries for url, exp in expected.items()}


@pytest.mark.parametrize("max_redirect", [0, 2])
def test_max_redirect(stage: ModuleType, default_site: tuple[Site, str], max_redirect: int) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_redirect=max_redirect))
    assert_matches_oracle(result, site.expected(base_url, max_redirect=max_redirect))


@pytest.mark.parametrize("max_tries", [1, 2])
def test_max_tries(stage: ModuleType, default_site: tuple[Site, str], max_tries: int) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_tries=max_tries))
    assert_matches_oracle(result, site.expected(base_url, max_tries=max_tries))


def test_exclude(stage: ModuleType, default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    exclude = r"/p/\d*7$|redirect"
    result = stage.crawl([base_url], Options(exclude=exclude))
    expected = site.expected(base_url, exclude=exclude)
    assert_matches_oracle(result, expected)
    assert len(expected) < len(site.expected(base_url))


def test_lenient_scope_on_an_ip_root_is_the_same_site(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(strict=False))
    assert_matches_oracle(result, site.expected(base_url))


def test_max_tasks_is_the_most_requests_the_server_sees_at_once(stage: ModuleType) -> None:
    site = Site(pages=60, traps=False, latency=0.05)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(max_tasks=4))
        assert site.max_in_flight == 4
        assert len(result.fetches) == len(site.expected(base_url))


@pytest.mark.parametrize("max_pages", [1, 7, 50])
def test_max_pages_gives_exactly_n_records(
    stage: ModuleType, default_site: tuple[Site, str], max_pages: int
) -> None:
    site, base_url = default_site
    result = stage.crawl([base_url], Options(max_pages=max_pages, max_tries=1))
    assert len(result.fetches) == max_pages
    assert len(site.requests) <= max_pages
    assert result.urls <= set(site.expected(base_url, max_tries=1))


def test_hostile_pages_end_as_records_and_the_crawl_finishes(stage: ModuleType) -> None:
    """Silence, resets, short bodies, garbage, 20 MB and binary: no hang, no crash."""
    site = Site(hostile=True)
    with serve(site) as base_url:
        started = time.monotonic()
        result = stage.crawl([base_url], Options(timeout=0.5, max_tries=2))
        assert time.monotonic() - started < 30
        assert_matches_oracle(result, site.expected(base_url, max_tries=2))


def test_timeout_ends_a_silent_page_with_an_error(stage: ModuleType) -> None:
    site = Site(hostile=True)
    with serve(site) as base_url:
        result = stage.crawl([base_url], Options(timeout=0.3, max_tries=2))
        silent = [s for s in result.fetches if s.url.endswith("/hostile/silent")]
        assert len(silent) == 1
        assert silent[0].status is None and silent[0].tries == 2
        assert "Timeout" in (silent[0].error or "")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_file_descriptor_left_open(stage: ModuleType, default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    stage.crawl([base_url], Options(max_pages=5))  # warm up: imports, caches, thread pools
    site.reset()
    before = open_fds()
    stage.crawl([base_url], Options())
    # The site runs in this process too: give its thread a moment to close its own ends.
    deadline = time.monotonic() + 2
    while open_fds() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_fds() <= before


# --- the command line, run as a student would run it -------------------------------------


def run_stage(
    stage: ModuleType, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", stage.__name__, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_cli_json_to_stdout_alone(stage: ModuleType, default_site: tuple[Site, str]) -> None:
    site, base_url = default_site
    done = run_stage(stage, base_url, "--json", "-", "-q", "--timeline")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    timeline = {url: (start, end) for url, start, end in doc["timeline"]}
    assert timeline.keys() == {f["url"] for f in doc["fetches"]}
    assert all(0 <= start <= end <= doc["elapsed_s"] for start, end in timeline.values())
    assert doc["stage"] == stage.__name__ and doc["interrupted"] is False
    assert {f["url"] for f in doc["fetches"]} == set(site.expected(base_url))
    assert "Finished" in done.stderr


def test_cli_without_root_crawls_the_built_in_site(stage: ModuleType) -> None:
    done = run_stage(stage, "-q")
    assert done.returncode == 0, done.stderr
    assert "Finished" in done.stdout and "built-in test site" in done.stderr


def test_cli_usage_error_exits_2(stage: ModuleType) -> None:
    done = run_stage(stage, "--max-tasks", "0")
    assert done.returncode == 2
    assert "max_tasks must be >= 1 (got 0)" in done.stderr


def test_ctrl_c_prints_the_partial_report_and_exits_130(stage: ModuleType, tmp_path: Any) -> None:
    site = Site(pages=400, traps=False, latency=0.2)
    with serve(site) as base_url:
        out = tmp_path / "crawl.json"
        proc = subprocess.Popen(
            [sys.executable, "-m", stage.__name__, base_url, "--json", str(out), "-q"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while len(site.requests) < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "interrupted" in stdout
        doc = json.loads(out.read_text())
        assert doc["interrupted"] is True
        recorded = {f["url"] for f in doc["fetches"]}
        requested = {base_url.rstrip("/") + path for path in site.requests}
        # Every URL the crawler touched is in the report, with its status or its error.
        assert requested <= recorded
        assert 15 <= len(recorded) < len(site.expected(base_url))


def test_fail_on_records_the_error_and_the_crawl_goes_on(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    """The stack-ripping demo's switch: each stage records the bug and crawls on."""
    site, base_url = default_site
    result = stage.crawl([base_url], Options(fail_on="/traps/"))
    failed = {s.url for s in result.fetches if s.error and "ParseError" in s.error}
    assert base_url + "traps/" in failed
    assert all(s.status is None and s.tries == 1 for s in result.fetches if s.url in failed)
    pages = {url for url in site.expected(base_url) if "/p/" in url}
    assert pages and pages <= result.urls  # the generated pages were crawled all the same
