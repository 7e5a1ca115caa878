"""--trace-events: a crawl as a Chrome Trace Event file, checked against the format's rules.

The rules checked are those a viewer relies on: the fields each phase needs, times in
whole microseconds on the crawl's clock, a name for every process and track, complete
events nested properly within a track, each async span begun and ended once, each flow
(who woke whom) started once and ended once, later, each end on a slice.  The steps in the
file are those the show page's recorder records for the same crawl.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared import STAGES
from shared.crawling import Options
from shared.testsite import Site, serve
from shared.tools.instruments import watching
from shared.tools.instruments.trace_events import COLOURS, TraceEvents
from shared.tools.show.record import recording

ROOT = Path(__file__).resolve().parent.parent
BOUND_S = 120  # far above any run here: only a hang ever reaches it
NEEDS = {  # the fields each phase needs, besides ph, name, pid, tid
    "X": {"ts", "dur"},
    "b": {"ts", "id", "cat"},
    "e": {"ts", "id", "cat"},
    "i": {"ts", "s"},
    "C": {"ts", "args"},
    "M": {"args"},
    "s": {"ts", "id", "cat"},
    "f": {"ts", "id", "cat", "bp"},
}
METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def problems(doc: dict[str, Any]) -> list[str]:
    """Every way the trace breaks the format's rules (empty: none)."""
    found: list[str] = []
    events = doc["traceEvents"]
    named: dict[int, set[int]] = defaultdict(set)  # pid -> tids with a thread_name
    processes: set[int] = set()
    used: set[tuple[int, int]] = set()
    for event in events:
        ph = event.get("ph")
        if ph not in NEEDS:
            found.append(f"unknown phase: {event}")
            continue
        missing = ({"name", "pid", "tid"} | NEEDS[ph]) - event.keys()
        if missing:
            found.append(f"{ph} without {sorted(missing)}: {event}")
            continue
        if not isinstance(event["pid"], int) or not isinstance(event["tid"], int):
            found.append(f"pid and tid must be integers: {event}")
        if ph != "M" and not (isinstance(event["ts"], int) and event["ts"] >= 0):
            found.append(f"ts must be whole microseconds from the start: {event}")
        if ph == "X" and not (isinstance(event["dur"], int) and event["dur"] >= 0):
            found.append(f"dur must be whole microseconds: {event}")
        if ph == "M":
            key = "sort_index" if event["name"].endswith("sort_index") else "name"
            if event["name"] not in METADATA or key not in event["args"]:
                found.append(f"bad metadata: {event}")
            if event["name"] == "process_name":
                processes.add(event["pid"])
            if event["name"] == "thread_name":
                named[event["pid"]].add(event["tid"])
        else:
            used.add((event["pid"], event["tid"]))
        if ph == "i" and event["s"] not in ("g", "p", "t"):
            found.append(f"an instant's scope is g, p or t: {event}")
        if ph == "C" and not all(isinstance(v, int | float) for v in event["args"].values()):
            found.append(f"a counter's args are numbers: {event}")
        if ph in "be" and event["cat"] not in COLOURS:
            found.append(f"a wait of no known kind: {event}")
    if found:  # the checks below read the fields: they need them all
        return found
    found += [f"process {pid} has no name" for pid, _ in used if pid not in processes]
    found += [f"track {pid}/{tid} has no name" for pid, tid in used if tid not in named[pid]]
    found += nesting(events) + spans(events) + flows(events)
    return found


def nesting(events: list[dict[str, Any]]) -> list[str]:
    """Complete events on one track must nest: each ends before its enclosing one does."""
    found = []
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        if event["ph"] == "X":
            tracks[event["pid"], event["tid"]].append(event)
    for track, complete in tracks.items():
        stack: list[int] = []  # the ends of the enclosing events
        for event in sorted(complete, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= event["ts"]:
                stack.pop()
            end = event["ts"] + event["dur"]
            if stack and end > stack[-1]:
                found.append(f"track {track}: {event} overlaps the event around it")
            stack.append(end)
    return found


def spans(events: list[dict[str, Any]]) -> list[str]:
    """Each async span begins once and ends once, later, with the same name and category."""
    begun = {(e["pid"], e["cat"], e["id"]): e for e in events if e["ph"] == "b"}
    ended = {(e["pid"], e["cat"], e["id"]): e for e in events if e["ph"] == "e"}
    found = [f"a span begun {len(begun)}, ended {len(ended)} times"] * (
        begun.keys() != ended.keys()
    )
    for key, b in begun.items():
        e = ended.get(key)
        if e is not None and (e["name"] != b["name"] or e["ts"] < b["ts"]):
            found.append(f"span {key} ends before it begins, or under another name")
    return found


def flows(events: list[dict[str, Any]]) -> list[str]:
    """Each flow (an arrow from a waker to the step it caused) starts once and ends once,
    at the same time or later, under one name; its start lies within a slice of its track
    (the viewer binds it to the enclosing slice), and so does its end ("bp": "e")."""
    found = []
    by_id: dict[tuple[int, str, int], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: {"s": [], "f": []}
    )
    slices: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for event in events:
        if event["ph"] in ("s", "f"):
            by_id[event["pid"], event["cat"], event["id"]][event["ph"]].append(event)
        if event["ph"] == "X":
            slices[event["pid"], event["tid"]].append((event["ts"], event["ts"] + event["dur"]))

    def on_a_slice(event: dict[str, Any]) -> bool:
        return any(a <= event["ts"] <= b for a, b in slices[event["pid"], event["tid"]])

    for key, ends in by_id.items():
        if len(ends["s"]) != 1 or len(ends["f"]) != 1:
            found.append(f"flow {key}: {len(ends['s'])} starts, {len(ends['f'])} ends")
            continue
        (start,), (end,) = ends["s"], ends["f"]
        if end["ts"] < start["ts"] or end["name"] != start["name"]:
            found.append(f"flow {key} ends before it starts, or under another name")
        if end["bp"] != "e":
            found.append(f"flow {key}: its end binds to the enclosing slice (bp e): {end}")
        found += [f"flow {key}: no slice at {e}" for e in (start, end) if not on_a_slice(e)]
    return found


def steps(doc: dict[str, Any], pid: int = 1) -> list[dict[str, Any]]:
    """The loop's steps of one process, in time order."""
    found = [e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "step"]
    return sorted((e for e in found if e["pid"] == pid), key=lambda e: e["ts"])


def names(doc: dict[str, Any], what: str) -> dict[tuple[int, int], str]:
    """The names metadata gives: (pid, tid) -> name of each track or process."""
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in doc["traceEvents"]
        if e["ph"] == "M" and e["name"] == what
    }


def test_the_checks_catch_a_broken_trace() -> None:
    """Each rule fails when broken: a missing field, milliseconds, overlap, a lone span."""
    good = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "s"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "ts": 0, "args": {"name": "w"}},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 11, "dur": 2},  # inside a: fine
    ]
    assert problems({"traceEvents": good}) == []
    overlap = {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 12, "dur": 9}
    assert problems({"traceEvents": [*good, overlap]})
    millis = {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": 0.5, "dur": 1}
    assert problems({"traceEvents": [*good, millis]})
    lone = {"ph": "b", "name": "w", "pid": 1, "tid": 1, "ts": 1, "id": 1, "cat": "queue"}
    assert problems({"traceEvents": [*good, lone]})
    unnamed = {"ph": "X", "name": "e", "pid": 1, "tid": 2, "ts": 30, "dur": 1}
    assert problems({"traceEvents": [*good, unnamed]})
    assert problems({"traceEvents": [*good, {"ph": "X", "name": "f", "pid": 1, "tid": 1}]})
    start = {"ph": "s", "name": "wake-up", "pid": 1, "tid": 1, "ts": 12, "id": 7, "cat": "w"}
    end = {**start, "ph": "f", "ts": 14, "bp": "e"}
    assert problems({"traceEvents": [*good, start, end]}) == []
    assert problems({"traceEvents": [*good, start]})  # a start without its end
    assert problems({"traceEvents": [*good, start, end, {**end, "ts": 13}]})  # an id twice
    assert problems({"traceEvents": [*good, start, {**end, "ts": 11}]})  # ends before it starts
    assert problems({"traceEvents": [*good, start, {**end, "ts": 20}]})  # on no slice


def test_each_stage_writes_a_valid_trace_of_the_default_site(
    stage: ModuleType, tmp_path: Path
) -> None:
    """The command line's --trace-events on the default test site: a trace a viewer can read."""
    path = tmp_path / "trace.json"
    began = time.monotonic()
    argv = [sys.executable, "-m", stage.__name__, "-q", "--trace-events", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=BOUND_S)
    seconds = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert problems(doc) == []
    assert names(doc, "process_name") == {(1, 0): stage.__name__}
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} == set(NEEDS)  # every kind of event is there
    # Microseconds: the trace spans less than the run, but more than a millisecond of it.
    end = max(e["ts"] + e.get("dur", 0) for e in events)
    assert 1000 < end < seconds * 1e6
    fetched = [e for e in steps(doc) if e["args"]["url"]]
    assert len({e["args"]["url"] for e in fetched}) > 300  # the default site: ~390 URLs
    waits = {e["cat"] for e in events if e["ph"] == "b"}
    assert {"readable", "writable"} <= waits
    wakes = [e for e in events if e["ph"] == "i"]
    assert wakes and all(e["tid"] == 0 and e["name"] == "wake-up" for e in wakes)
    counted = {next(iter(e["args"])) for e in events if e["ph"] == "C"}
    assert counted == {"ready queue", "fetches in flight"}


@pytest.mark.parametrize("package", list(STAGES.values()))
def test_the_steps_are_those_the_show_page_records(package: str) -> None:
    """Watched by the show page's recorder and by --trace-events at once: the same steps,
    by the same actors, in the same order."""
    module = importlib.import_module(package)
    site = Site(6, traps=False, latency=0.02)
    options = Options(max_tasks=2)
    trace = TraceEvents()
    with serve(site) as base_url, recording(package) as recorder, watching(trace):
        module.crawl([base_url], options)
    assert not recorder.errors
    doc = trace.to_json()
    assert problems(doc) == []
    ours = [(e["args"]["what"], e["args"]["url"]) for e in steps(doc)]
    theirs = [(step.what, step.url) for step in recorder.steps]
    assert ours == theirs and len(ours) > 10
    # An actor of the page is a track of the trace, and the other way round.
    pairs = {(step.actor, e["tid"]) for step, e in zip(recorder.steps, steps(doc), strict=True)}
    assert len(pairs) == len({a for a, _ in pairs}) == len({t for _, t in pairs}) > 2
    # Who woke whom: arrows end at steps; from select() (a socket was ready) and, where there
    # are tasks, from a step of another task (a future's result set, the queue put to).
    ends = [e for e in doc["traceEvents"] if e["ph"] == "f"]
    starts = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "s"}
    assert {(e["ts"], e["tid"]) for e in ends} <= {(e["ts"], e["tid"]) for e in steps(doc)}
    sources = {starts[e["id"]]["tid"] for e in ends if e["tid"] != starts[e["id"]]["tid"]}
    assert 0 in sources  # the loop's track: select()
    if package != STAGES["stage1"]:
        assert sources - {0}, "no task woke another"


def test_a_wait_is_coloured_by_what_it_waits_for() -> None:
    """Stage 2 on a slow site: workers wait on the queue, and the slow answers are reads."""
    site = Site(4, traps=False, latency=0.15)
    trace = TraceEvents()
    with serve(site) as base_url, watching(trace):
        importlib.import_module(STAGES["stage2"]).crawl([base_url], Options(max_tasks=3))
    events = trace.to_json()["traceEvents"]
    waits = [e for e in events if e["ph"] == "b"]
    ends = {(e["cat"], e["id"]): e["ts"] for e in events if e["ph"] == "e"}
    reads = [ends[e["cat"], e["id"]] - e["ts"] for e in waits if e["cat"] == "readable"]
    assert max(reads) >= 140_000  # 0.15 s, in microseconds, waiting for the answer
    assert all(e["cname"] == COLOURS[e["cat"]] for e in waits)
    assert any(e["cat"] == "queue" and e["name"].endswith("get") for e in waits)


def test_show_all_writes_three_processes_in_one_file(tmp_path: Path) -> None:
    """``nox -s show -- all --trace-events PATH``: one process per stage, one file."""
    path = tmp_path / "all.json"
    argv = [sys.executable, "-m", "shared.tools.show", "all", "--no-open"]
    argv += ["--out", str(tmp_path / "show.html"), "--trace-events", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=BOUND_S)
    assert done.returncode == 0, done.stderr
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert problems(doc) == []
    assert names(doc, "process_name") == {
        (pid, 0): name for pid, name in enumerate(STAGES.values(), start=1)
    }
    assert all(steps(doc, pid) for pid in (1, 2, 3))


def test_ctrl_c_still_writes_the_trace_so_far(tmp_path: Path) -> None:
    """Interrupted mid-crawl, the file holds what was recorded until then, closed properly."""
    path = tmp_path / "trace.json"
    argv = [sys.executable, "-m", STAGES["stage2"], "-q", "--site-latency", "0.3"]
    proc = subprocess.Popen(
        [*argv, "--trace-events", str(path)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
    )
    try:
        assert proc.stderr is not None
        proc.stderr.readline()  # "crawling the built-in test site at ...": it has begun
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=BOUND_S) == 130
    finally:
        proc.kill()
        proc.wait()
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert problems(doc) == [] and steps(doc)
