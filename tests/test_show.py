"""nox -s show: the recorder's data is sound."""

from __future__ import annotations

import io
import re
from types import ModuleType

import pytest

from shared.crawling import Options
from shared.show.command import build_parser, crawl_arguments, main
from shared.show.page import crawl_data, waits
from shared.show.record import Recorder, recording
from shared.testsite import Site, serve

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
    lines = echo.getvalue().splitlines()
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
    assert any(re.fullmatch(r"task request /p/\d to end", label) for label in labels), labels
    chains = {tuple(name for name, *_ in step.frames) for step in recorder.steps}
    assert ("request", "sock_recv", "_when_ready") in chains
    assert ("work", "fetch", "wait_for") in chains


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
