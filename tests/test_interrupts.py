"""Ctrl-C at any moment and a closed pipe: every stage ends promptly and loses nothing.

A student presses Ctrl-C whenever they like: while the program imports, while the
built-in site starts, in the middle of a fetch, during the clean-up of an earlier
Ctrl-C.  A student pipes the trace into ``head``.  These tests do both to each stage as
a real process, many times, while the machine is busy, and hold every run to the same
promise: it ends within a bound, with exit status 130 (or 0 if the crawl finished
first), writes valid JSON, and every URL the server saw requested has a record.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared import interrupt
from shared.crawling import Options
from shared.interrupt import CtrlC
from shared.testsite import Site, serve

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="watches the crawler's file descriptors in /proc"
)

AT_ONCE = 3  # crawls run together: the machine is as busy as a student's laptop in class
BOUND_S = 30  # far above a run's time: only a hang ever reaches it


def ctrl_c_is_taken(proc: subprocess.Popen[Any], deadline: float) -> bool:
    """Wait until the crawler process owns a socket: it has taken Ctrl-C over.

    Until the first line of a stage's ``__main__`` runs, Ctrl-C belongs to the Python
    interpreter starting up (it raises KeyboardInterrupt wherever that is), which no
    program can change.  The first thing a stage does is take it over and open the
    socket pair its loop watches for Ctrl-C, so a socket among its file descriptors
    marks the moment from which every Ctrl-C is the stage's to handle.  (Only once the
    process runs our command line: between fork and exec it still holds our sockets.)
    """
    argv = b"\0".join(os.fsencode(arg) for arg in proc.args) + b"\0"
    proc_dir = Path(f"/proc/{proc.pid}")
    while time.monotonic() < deadline:
        try:
            if (proc_dir / "cmdline").read_bytes() == argv and any(
                os.readlink(fd).startswith("socket:") for fd in (proc_dir / "fd").iterdir()
            ):
                return True
        except OSError:  # the process ended, or an fd closed while we looked
            pass
        time.sleep(0.002)
    return False


@dataclass
class Run:
    """One crawl interrupted at one moment, and what it left behind."""

    delay: float
    returncode: int | None
    stderr: str
    doc: dict[str, Any] | None
    requested: set[str]

    def problems(self) -> list[str]:
        """What this run got wrong: empty when it kept every promise."""
        found = []
        if self.returncode not in (0, 130):
            found.append(f"exit status {self.returncode}")
        if "Traceback" in self.stderr:
            found.append("a traceback: " + self.stderr[self.stderr.index("Traceback") :][:600])
        if self.doc is None:
            found.append("no valid JSON")
        else:
            if self.doc["interrupted"] != (self.returncode == 130):
                found.append(f"interrupted={self.doc['interrupted']} with exit {self.returncode}")
            missing = self.requested - {fetch["url"] for fetch in self.doc["fetches"]}
            if missing:
                found.append(f"requested but not recorded: {sorted(missing)}")
        return [f"Ctrl-C at {self.delay:.3f} s: {problem}" for problem in found]


def interrupt_once(
    module: str, args: list[str], delay: float, workdir: Path, requested: Callable[[], set[str]]
) -> Run:
    """Start a crawl, send it SIGINT ``delay`` seconds after it took Ctrl-C over, collect."""
    out = workdir / "crawl.json"
    with (workdir / "stdout").open("w") as stdout, (workdir / "stderr").open("w+") as stderr:
        argv = [sys.executable, "-m", module, *args, "--json", str(out)]
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
        try:
            assert ctrl_c_is_taken(proc, time.monotonic() + BOUND_S), "never started"
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            returncode: int | None = proc.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            proc.kill()
            proc.wait()
        stderr.seek(0)
        errors = stderr.read()
    try:
        doc = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    return Run(delay, returncode, errors, doc, requested())


@dataclass(frozen=True)
class Scenario:
    """A site, the crawl options, and the span of time in which Ctrl-C may land."""

    name: str
    args: tuple[str, ...]
    span_s: float
    site: Callable[[], Site] | None  # None: the stage starts its built-in site itself

    @contextmanager
    def target(self) -> Iterator[tuple[list[str], Callable[[], set[str]]]]:
        """Serve the site; yield the crawl's arguments and what the server saw requested."""
        if self.site is None:  # the server is inside the crawler: nothing to watch
            yield list(self.args), set
            return
        site = self.site()
        with serve(site) as base_url:
            base = base_url.rstrip("/")
            yield [base_url, *self.args], lambda: {base + path for path in site.requests}


SCENARIOS = [
    # The issue's own reproduction: a slow tiny site, two fetches at a time, the trace on.
    Scenario(
        "slow-tiny-trace",
        ("--trace", "--max-tasks", "2", "--ignore-robots", "-q"),
        1.2,
        lambda: Site(pages=6, traps=False, latency=0.1),
    ),
    # Silent, reset and garbage pages, short timeouts and retries: clean-up has a lot to do.
    Scenario(
        "hostile",
        ("--timeout", "0.5", "--max-tries", "2", "-q"),
        1.5,
        lambda: Site(hostile=True),
    ),
    # No ROOT: Ctrl-C while the program imports aiohttp and starts the built-in site.
    Scenario("start-up", ("--site-pages", "6", "--ignore-robots", "-q"), 0.5, None),
]


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_ctrl_c_at_random_moments_loses_nothing(
    stage: ModuleType, scenario: Scenario, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    runs = request.config.getoption("--storm-runs")
    # Seeded: a failing moment can be replayed.  The seed differs per stage and scenario.
    rng = random.Random(f"{stage.__name__}/{scenario.name}")
    delays = [rng.uniform(0, scenario.span_s) for _ in range(runs)]

    def one(index: int) -> Run:
        workdir = tmp_path / str(index)
        workdir.mkdir()
        with scenario.target() as (args, requested):
            return interrupt_once(stage.__name__, args, delays[index], workdir, requested)

    started = time.monotonic()
    with ThreadPoolExecutor(AT_ONCE) as pool:
        results = list(pool.map(one, range(runs)))
    problems = [problem for run in results for problem in run.problems()]
    assert not problems, f"{len(problems)} problems in {runs} runs:\n" + "\n".join(problems)
    assert time.monotonic() - started < runs * BOUND_S  # bounded, as every run was


# --- a closed pipe: `| head` ends the crawl promptly, with no traceback ----------------


@pytest.fixture
def slow_site() -> Iterator[tuple[Site, str]]:
    """A site that takes a stage about 10 s to crawl: long enough to tell prompt from not."""
    site = Site(pages=200, traps=False, latency=0.1)
    with serve(site) as base_url:
        yield site, base_url


def recorded(path: Path) -> tuple[dict[str, Any], set[str]]:
    """The JSON a crawl wrote, and the URLs it has records for."""
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc, {fetch["url"] for fetch in doc["fetches"]}


def test_trace_into_head_ends_the_crawl_promptly(
    stage: ModuleType, slow_site: tuple[Site, str], tmp_path: Path
) -> None:
    """`python -m STAGE ROOT --trace 2>&1 | head -3`: the crawl stops when head does."""
    site, base_url = slow_site
    out = tmp_path / "crawl.json"
    argv = [sys.executable, "-m", stage.__name__, base_url, "--trace", "--max-tasks", "2"]
    argv += ["--ignore-robots", "--json", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with ExitStack() as cleanup:
        cleanup.callback(proc.wait)
        cleanup.callback(proc.kill)
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]  # what head -3 reads
        proc.stdout.close()  # head exits: the pipe is closed
        closed = time.monotonic()
        returncode = proc.wait(timeout=BOUND_S)
        elapsed = time.monotonic() - closed
    assert all(line.strip() for line in lines), lines
    assert returncode != 0 and returncode > 0, returncode  # ended by choice, not by a signal
    # The whole crawl takes about 10 s, its answers' latency, busy machine or not: 8 s tells
    # prompt from not, with room for a loaded laptop.
    assert elapsed < 8, f"took {elapsed:.1f} s to notice the closed pipe"
    doc, urls = recorded(out)
    assert doc["interrupted"] is True
    requested = {base_url.rstrip("/") + path for path in site.requests}
    assert requested <= urls  # nothing the crawler touched is lost
    assert len(urls) < len(site.expected(base_url))  # it stopped early


def test_report_into_a_closed_pipe_ends_quietly(stage: ModuleType, tmp_path: Path) -> None:
    """The report's reader left before the end (`| less`, quit early): no traceback spam."""
    site = Site(pages=10, traps=False)
    out = tmp_path / "crawl.json"
    with serve(site) as base_url, (tmp_path / "stderr").open("w+") as stderr:
        argv = [sys.executable, "-m", stage.__name__, base_url, "--json", str(out)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr)
        assert proc.stdout is not None
        proc.stdout.close()  # gone before the crawl ends, as a pager quit at once
        returncode = proc.wait(timeout=BOUND_S)
        stderr.seek(0)
        errors = stderr.read()
    assert returncode > 0, returncode  # a failure, but one the program chose
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors
    doc, urls = recorded(out)  # the JSON file is written first: the pipe loses nothing
    assert doc["interrupted"] is False
    assert urls == set(site.expected(base_url))


# --- the mechanism, in-process ------------------------------------------------------------


def test_the_first_press_is_news_on_a_socket_and_the_second_raises() -> None:
    ctrl_c = CtrlC()
    stopped: list[str] = []
    try:
        ctrl_c.on_sigint(signal.SIGINT, None)  # the first press: no exception, one byte
        assert ctrl_c.presses == 1
        assert select.select([ctrl_c.reader], [], [], 0)[0] == [ctrl_c.reader]
        ctrl_c.on_press(lambda: stopped.append("stop"))()  # what the loop runs
        assert stopped == ["stop"]
        assert select.select([ctrl_c.reader], [], [], 0)[0] == []  # emptied: no busy loop
        with pytest.raises(KeyboardInterrupt):
            ctrl_c.on_sigint(signal.SIGINT, None)  # the second press: stop at once
    finally:
        ctrl_c.close()


def test_a_crawl_takes_ctrl_c_only_while_it_runs(stage: ModuleType) -> None:
    """A crawl in a test or a notebook puts the previous SIGINT handler back after."""
    before = signal.getsignal(signal.SIGINT)
    with serve(Site(pages=3, traps=False)) as base_url:
        result = stage.crawl([base_url], Options(ignore_robots=True))
    assert not result.interrupted
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_in_a_crawl_returns_the_partial_result(stage: ModuleType) -> None:
    """SIGINT from outside, in-process: the crawl stops by its own clean-up and says so."""
    site = Site(pages=200, traps=False, latency=0.1)
    with serve(site) as base_url:
        press = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        press.start()
        started = time.monotonic()
        result = stage.crawl([base_url], Options(max_tasks=2, ignore_robots=True))
        elapsed = time.monotonic() - started
        press.join()
    assert result.interrupted
    assert elapsed < 8  # the whole crawl takes about 10 s, its answers' latency, busy or not
    requested = {base_url.rstrip("/") + path for path in site.requests}
    assert requested <= result.urls
    interrupted = [f for f in result.fetches if f.error == "interrupted before the response"]
    assert interrupted, "fetches in flight at the press are recorded as interrupted"


@pytest.mark.parametrize("max_per_host", [None, 1], ids=["hosts-free", "one-per-host"])
def test_a_second_ctrl_c_while_the_workers_clean_up_stops_the_crawl(
    stage: ModuleType,
    max_per_host: int | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The second press lands as the first one's clean-up closes a socket: nothing runs after.

    The crawl returns its partial result, and the fetches it abandoned are only closed:
    none records a bug, none raises on the way out, none takes another URL from the queue
    (the server sees no request after the crawl returned).  With one fetch per host, the
    others wait for its slot, which a fetch closed after the loop gives back.
    """
    first = threading.Event()
    second: list[int] = []
    monkeypatch.setattr(interrupt, "at_first_press", [first.set])
    real_close = socket.socket.close

    def close(sock: socket.socket) -> None:
        real_close(sock)
        # The crawl's own sockets: the server's threads close theirs too.
        if first.is_set() and not second and threading.current_thread() is threading.main_thread():
            second.append(1)
            os.kill(os.getpid(), signal.SIGINT)

    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(socket.socket, "close", close)
    site = Site(pages=200, traps=False, latency=0.1)
    with serve(site) as base_url:
        press = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        press.start()
        # As a stage's program takes Ctrl-C over (stage 3's crawl hears the presses through it).
        with caplog.at_level(logging.ERROR), interrupt.caught():
            options = Options(max_tasks=4, max_per_host=max_per_host, ignore_robots=True)
            result = stage.crawl([base_url], options)
            press.join()
            requested = len(site.requests)
            gc.collect()  # the abandoned fetches are closed, if they were not yet
            time.sleep(0.3)  # time for a request that should not come
        assert len(site.requests) == requested
    assert second, "the first press's clean-up closed no socket"
    assert result.interrupted
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert [str(u.exc_value) for u in unraisable] == []


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="no SIGUSR1 on this system")
def test_sigusr1_while_the_program_starts_is_taken_as_ctrl_c_is(tmp_path: Path) -> None:
    """kill -USR1 asks for the task tree; sent while stage 3 still imports aiohttp, it must
    not end the crawl by the signal's default action: it is taken over with Ctrl-C, first."""
    argv = [sys.executable, "-m", "stage3_asyncio", "--site-pages", "3", "--ignore-robots", "-q"]
    with (tmp_path / "stderr").open("w+") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            assert ctrl_c_is_taken(proc, time.monotonic() + BOUND_S), "never started"
            proc.send_signal(signal.SIGUSR1)  # at once: the imports have only begun
            returncode = proc.wait(timeout=BOUND_S)
        finally:
            proc.kill()
            proc.wait()
        stderr.seek(0)
        errors = stderr.read()
    assert returncode == 0, errors
    assert "--- tasks ---" in errors and "Traceback" not in errors
