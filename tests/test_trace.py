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


# " seconds  task             coroutines resumed <- value handed in        url"
HEADER = re.compile(r"^ seconds  (socket or timer |task {12}) \S.{43} url$")


def traced_steps(stage: ModuleType, capsys: pytest.CaptureFixture[str]) -> list[re.Match[str]]:
    """Crawl a 6-page site with two tasks and --trace; return each step's line, parsed."""
    site = Site(pages=6, traps=False)
    with serve(site) as base_url, watching(Tracer()):  # what --trace does
        result = stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
    assert len(result.fetches) == 6
    header, *lines = capsys.readouterr().err.splitlines()
    assert HEADER.match(header), header
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


def test_the_header_names_the_columns_as_the_stage_fills_them(
    stage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stage 1's steps are callbacks run for a socket or a timer; stages 2 and 3's are
    chains of coroutines resumed by a task, handed a value."""
    traced_steps(stage, capsys)  # checks that the header comes first, as a header
    site = Site(pages=1, traps=False)
    with serve(site) as base_url, watching(Tracer()):
        stage.crawl([base_url], Options(ignore_robots=True))
    header = capsys.readouterr().err.splitlines()[0]
    if stage.__name__ == "stage1_callbacks":
        assert "socket or timer" in header and "event -> callback" in header, header
    else:
        assert " task " in header and "<- value" in header, header


@pytest.mark.stages("stage2_generators", "stage3_asyncio")  # stage 1 has no workers
def test_an_idle_worker_at_the_queue_shows_no_url(
    stage: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker resumed at the queue's get (handed its next URL, or cancelled at the end)
    is between two URLs: the one in its ``url`` variable is the last it fetched."""
    at_get = [
        (m.group("what"), m.group("url"))
        for m in traced_steps(stage, capsys)
        if re.match(r"work(>get)? <- (\(|raise CancelledError)", m.group("what"))
    ]
    assert len(at_get) >= 2, "each worker is cancelled at get at the end"
    assert all(url == "-" for _, url in at_get), at_get


def test_stage3_each_step_says_what_it_was_handed(capsys: pytest.CaptureFixture[str]) -> None:
    """As stage 2's ``<- bytes[3159]``: the response a request waited for, the URL a worker
    took from the queue, the CancelledError that ends it; not a bare "resumed"."""
    whats = [what for whats in stage3_steps(capsys).values() for what in whats]
    assert [what for what in whats if what.startswith("work>fetch>request <- ClientResponse")]
    assert [what for what in whats if what.startswith("work <- ('http")], whats
    assert [what for what in whats if what == "work <- raise CancelledError"], whats
    assert not [what for what in whats if what.endswith(" resumed")], whats


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
        resumed = [what for what in whats if " <- " in what]
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
    """Connections are news only to an observer: a crawl nobody watches asks for none."""
    made: list[aiohttp.TraceConfig] = []

    class Counted(aiohttp.TraceConfig):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(aiohttp, "TraceConfig", Counted)
    site = Site(pages=3, traps=False)
    with serve(site) as base_url:
        stage3.crawl([base_url], Options(ignore_robots=True))
        assert not made
        timeline = Timeline()
        with watching(timeline):
            stage3.crawl([base_url], Options(ignore_robots=True))
    assert len(made) == 1
    assert all(connected is not None for _, _, connected in timeline.phases)
