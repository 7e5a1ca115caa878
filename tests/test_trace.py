"""--trace: one line per loop step, one format for every stage, fetches visibly interleaved."""

from __future__ import annotations

import re
from types import ModuleType

import aiohttp
import pytest

import stage3_asyncio as stage3
from shared.crawling import Options
from shared.testsite import Site, serve
from shared.tools.instruments import watching
from shared.tools.instruments.timeline import Timeline
from shared.tools.instruments.trace import Tracer, summarize

# "  0.0123  fd 8             readable -> _on_readable       http://127.0.0.1:5000/p/1"
LINE = re.compile(r"^ *\d+\.\d{4}  (?P<who>\S.{15}) (?P<what>.+?) +(?P<url>http\S+|-)$")


def traced_steps(stage: ModuleType, capsys: pytest.CaptureFixture[str]) -> list[re.Match[str]]:
    """Crawl a 6-page site with two tasks and --trace; return each step's line, parsed."""
    site = Site(pages=6, traps=False)
    with serve(site) as base_url, watching(Tracer()):  # what --trace does
        result = stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
    assert len(result.fetches) == 6
    lines = capsys.readouterr().err.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), [line for line, m in zip(lines, matches, strict=True) if not m]
    return [m for m in matches if m]


def traced_urls(stage: ModuleType, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The URL of each step of a traced crawl (``-`` for a step with none)."""
    return [m.group("url") for m in traced_steps(stage, capsys)]


def test_trace_shows_fetches_interleaving(
    stage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between two steps of one fetch, a step of another fetch runs: two URLs in flight."""
    urls = traced_urls(stage, capsys)
    assert len(urls) >= 12  # at least two steps per page
    interleaved = [
        url
        for i, url in enumerate(urls)
        if url != "-"
        and url in urls[i + 1 :]
        and any(other not in ("-", url) for other in urls[i + 1 : urls.index(url, i + 1)])
    ]
    assert interleaved, "no fetch was paused while another one ran"


def stage3_steps(capsys: pytest.CaptureFixture[str]) -> dict[str, list[str]]:
    """Trace stage 3 on the 6-page site; return what each worker's steps ran, in order."""
    steps: dict[str, list[str]] = {}
    for m in traced_steps(stage3, capsys):
        steps.setdefault(m.group("who").strip(), []).append(m.group("what"))
    assert {"worker-0", "worker-1"} <= steps.keys()
    return {who: whats for who, whats in steps.items() if who.startswith("worker-")}


def test_stage3_a_coroutine_just_called_is_not_resumed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A step resumes a worker's chain from its outermost coroutine, ``work``, down.

    With --ignore-robots, ``robots`` returns without ever pausing, so it never appears;
    nor does a chain that starts below ``work``, as a first call mistaken for a resumption.
    """
    for whats in stage3_steps(capsys).values():
        resumed = [what for what in whats if what.endswith(" resumed")]
        assert resumed, whats
        assert all(what.startswith("work") for what in resumed), whats
        assert not [what for what in whats if "robots" in what], whats


def test_stage3_a_task_first_step_says_started(capsys: pytest.CaptureFixture[str]) -> None:
    """Like stage 2's ``work <- None``, a worker's first step is told apart: it starts."""
    for whats in stage3_steps(capsys).values():
        assert whats[0] == "work started", whats
        assert "work started" not in whats[1:], whats


def test_without_trace_nothing_is_printed(
    stage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    site = Site(pages=3, traps=False)
    with serve(site) as base_url:
        stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
    assert capsys.readouterr().err == ""


def test_summaries_are_short() -> None:
    assert summarize(b"x" * 5000) == "bytes[5000]"
    assert summarize(TimeoutError("slow")) == "raise TimeoutError"
    assert summarize(("http://h/" + "a" * 80, 10)).endswith("...")
    assert summarize(None) == "None"
    assert summarize(object()) == "object"


def test_stage3_makes_an_aiohttp_trace_config_only_for_someone_watching(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Connections are news only to an observer: a crawl nobody watches asks for one less.

    The one left is stage 3's own, ``pool_trace``: its middleware needs to hear which
    connection each request had.
    """
    made: list[aiohttp.TraceConfig] = []

    class Counted(aiohttp.TraceConfig):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(aiohttp, "TraceConfig", Counted)
    site = Site(pages=3, traps=False)
    with serve(site) as base_url:
        stage3.crawl([base_url], Options(ignore_robots=True))
        assert len(made) == 1
        timeline = Timeline()
        with watching(timeline):
            stage3.crawl([base_url], Options(ignore_robots=True))
    assert len(made) == 1 + 2
    assert all(connected is not None for _, _, connected in timeline.phases)
