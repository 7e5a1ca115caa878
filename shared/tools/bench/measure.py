"""What compare.py and bench.py share: running a crawler as a child, and reading its timeline.

Each crawler runs as its own process, ``python -m STAGE URL --json F --timeline -q``, so
that its peak memory is its own: ``os.wait4`` hands back the child's resource usage,
whose ``ru_maxrss`` is the most resident memory it ever had (in KiB on Linux); see
rusage.py for why a small launcher stands in between.  The test site runs in another
process (see server.py).  On a machine with two cores or more
the site is pinned to one core and the crawler to another, so they do not take turns.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared import STAGES

#: The root of the repository: stage packages and shared/ live here.
ROOT = Path(__file__).resolve().parents[3]
#: The launcher that measures a crawler's peak memory (run as a script, see its docstring).
RUSAGE = Path(__file__).resolve().with_name("rusage.py")


@dataclass(frozen=True)
class Crawler:
    """One crawler to compare: its name in tables, its module, and the files that are it."""

    name: str
    module: str
    files: tuple[Path, ...]


def _package_files(package: str) -> tuple[Path, ...]:
    return tuple(sorted((ROOT / package).glob("*.py")))


#: The three stages and the baseline, in the order they are shown.
CRAWLERS = (
    *(Crawler(package, package, _package_files(package)) for package in STAGES.values()),
    Crawler(
        "threaded",
        "shared.tools.bench.threaded",
        (ROOT / "shared" / "tools" / "bench" / "threaded.py",),
    ),
)

Timeline = Sequence[Sequence[Any]]  # [url, start, end] per fetch, as the JSON has it


def memory_measurable() -> bool:
    """Whether a crawler's peak memory can be measured here: by fork, wait4 and resource.

    Linux and macOS have all three; Windows none.  Without them a crawler runs as a plain
    child process, timed but not weighed (compare says so and leaves the column out).
    """
    try:
        import resource  # noqa: F401  # POSIX only
    except ImportError:
        return False
    return hasattr(os, "fork") and hasattr(os, "wait4")


def posix_only(program: str, system: str = os.name) -> None:
    """Exit with status 2, saying why, where the measurements cannot run.

    They start each crawler under rusage.py, which forks and reads the child's resource
    usage (``os.fork``, ``os.wait4``, the ``resource`` module), and they stop a crawler
    with a signal to its process group: Linux and macOS have all of it, Windows none of
    it.  The crawlers themselves need none of it.
    """
    if system != "posix":
        print(
            f"{program} measures with fork() and the resource module, which Windows does "
            "not have: run it on Linux or macOS.",
            file=sys.stderr,
        )
        raise SystemExit(2)


# --------------------------------------------------------------------------- the timeline


def in_flight_steps(timeline: Timeline) -> list[tuple[float, int]]:
    """Return the step function "fetches in flight" as (time, count from then on) points.

    The first point is (0.0, 0).  A fetch that ends at the very moment another begins
    is counted as ended first: the two were never in flight together.
    """
    events = sorted(
        [(float(start), 1) for _, start, _ in timeline]
        + [(float(end), -1) for _, _, end in timeline]
    )  # at equal times -1 sorts before +1: ends first
    steps = [(0.0, 0)]
    count = 0
    for when, change in events:
        count += change
        if steps[-1][0] == when:
            steps[-1] = (when, count)
        else:
            steps.append((when, count))
    return steps


def peak_in_flight(timeline: Timeline) -> int:
    """Return the most fetches that were in flight at the same moment."""
    return max(count for _, count in in_flight_steps(timeline))


def level_bound(levels: Sequence[int], max_tasks: int, latency: float) -> float:
    """Return the least time a breadth-first crawl can take when each response takes ``latency``.

    A page can only be fetched after the page linking to it, so each level of the site
    costs at least ceil(level size / max_tasks) rounds of one latency each.
    """
    return sum(math.ceil(size / max_tasks) for size in levels) * latency


def race_floor(delay: float, fetches: int, accepts_per_s: float) -> float:
    """Return the least time ``fetches`` slow pages fetched at once can take on this site.

    Each response comes ``delay`` seconds after its request, and the requests cannot all
    arrive at once: the site accepts new connections at ``accepts_per_s`` (S0), so the last
    one is accepted ``fetches / accepts_per_s`` seconds after the first.
    """
    return delay + fetches / accepts_per_s


def page_set_difference(got: Iterable[str], expected: Iterable[str]) -> str:
    """Return "yes" when the page sets are equal, else "+N -M" (N extra, M missing)."""
    found, wanted = set(got), set(expected)
    if found == wanted:
        return "yes"
    return f"+{len(found - wanted)} -{len(wanted - found)}"


def count_lines(paths: Iterable[Path]) -> int:
    """Count the lines that are neither blank nor only a comment: the stages' budget rule.

    Docstrings count: they are part of what a student reads.  (The same rule as
    ``grep -cvE '^\\s*(#.*)?$'``, so the table and the 500-line budget agree.)
    """
    total = 0
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            total += bool(stripped) and not stripped.startswith("#")
    return total


# --------------------------------------------------------------------------- child processes


def core_pair(wanted: bool = True) -> tuple[int | None, int | None]:
    """Return (the site's core, the crawler's core), or (None, None) not to pin.

    Pinning needs two cores to keep the site and the crawler apart, and Linux's
    ``sched_setaffinity``; elsewhere the processes share whatever the system gives them.
    """
    if not wanted or not hasattr(os, "sched_getaffinity"):
        return None, None
    available = sorted(os.sched_getaffinity(0))
    return (available[0], available[1]) if len(available) >= 2 else (None, None)


def pin(pid: int, core: int | None) -> None:
    """Pin a running process to one core (the system call behind ``taskset -c``).

    Used for the site server and the load client, which need no other preparation; a
    crawler is pinned by its launcher (rusage.py) before it starts.
    """
    if core is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):  # the process may already be gone
            os.sched_setaffinity(pid, {core})


def fd_limit() -> int:
    """The most file descriptors a child can have (the hard RLIMIT_NOFILE)."""
    import resource  # POSIX only: imported here so that posix_only() can say so first

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return hard if hard != resource.RLIM_INFINITY else 1 << 20


@dataclass
class Run:
    """One crawl by one crawler, as a child process."""

    crawler: Crawler
    returncode: int
    wall_s: float  # the whole process, interpreter start-up included
    peak_rss_kib: int
    cpu_s: float  # user and system time of the crawler process, start-up included
    doc: dict[str, Any] = field(default_factory=dict)  # the crawl's JSON; empty if it failed
    stderr: str = ""
    wants_json: bool = True

    @property
    def ok(self) -> bool:
        """True when the crawler exited normally and wrote its JSON (if asked to)."""
        return self.returncode == 0 and (bool(self.doc) or not self.wants_json)

    @property
    def records(self) -> int:
        """How many URLs the crawl recorded."""
        return len(self.doc.get("fetches", []))

    @property
    def elapsed_s(self) -> float:
        """The crawl's own time (its JSON's elapsed_s): no interpreter start-up, no report."""
        return float(self.doc.get("elapsed_s", 0.0))

    @property
    def urls(self) -> set[str]:
        """The crawl's page set."""
        return {fetch["url"] for fetch in self.doc.get("fetches", [])}

    @property
    def timeline(self) -> list[list[Any]]:
        """[url, start, end] per fetch."""
        return list(self.doc.get("timeline", []))


def run_crawler(
    crawler: Crawler,
    url: str,
    args: Sequence[str] = (),
    *,
    core: int | None = None,
    timeout: float = 120.0,
    write_json: bool = True,
) -> Run:
    """Crawl ``url`` with one crawler in a child process and measure it.

    The child gets ``--json F --timeline -q`` besides ``args`` (only ``-q`` without
    ``write_json``); its report (stdout) is thrown away.  It runs under rusage.py,
    which measures its peak memory.  After ``timeout`` seconds it is sent SIGINT (it
    writes its partial JSON), five seconds later SIGKILL.  Where memory cannot be
    measured (Windows: see memory_measurable), the crawler runs with no launcher, its
    peak memory and CPU time are 0, and at the timeout it is terminated.
    """
    measured = memory_measurable()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out, usage = Path(tmp) / "crawl.json", Path(tmp) / "rusage"
        argv = [sys.executable, "-S", str(RUSAGE), str(usage), "-" if core is None else str(core)]
        argv = [*(argv if measured else []), sys.executable, "-m", crawler.module, url, *args]
        argv += ["--json", str(out), "--timeline", "-q"] if write_json else ["-q"]
        with open(Path(tmp) / "stderr", "w+", encoding="utf-8") as err:
            started = time.monotonic()
            # A process group of its own, so that SIGKILL reaches the launcher and the crawler.
            group = 0 if measured else None  # None: no group, as on Windows
            proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT, process_group=group
            )
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                if not measured:
                    proc.terminate()  # no SIGINT to send a process on Windows
                    proc.wait()
                else:
                    proc.send_signal(signal.SIGINT)  # passed on to the crawler by the launcher
                    try:
                        proc.wait(5)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
            wall = time.monotonic() - started
            err.seek(0)
            stderr = err.read()
        try:
            code, rss, cpu = usage.read_text().split()
            status, peak, cpu_s = int(code), int(rss), float(cpu)
        except (OSError, ValueError):
            status, peak, cpu_s = proc.returncode, 0, 0.0
        try:
            doc = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = {}
    return Run(crawler, status, wall, peak, cpu_s, doc, stderr[-4000:], write_json)


# --------------------------------------------------------------------------- the site


@dataclass(frozen=True)
class SiteOptions:
    """The test site's definition, as shared.testsite.Site takes it."""

    pages: int = 300
    seed: int = 1
    fanout: int = 5
    latency: float = 0.0
    traps: bool = True
    wide: int = 0
    wide_delay: float = 0.0

    def argv(self) -> list[str]:
        """The server's command line for this site."""
        args = [f"--pages={self.pages}", f"--seed={self.seed}", f"--fanout={self.fanout}"]
        args += [f"--latency={self.latency}", f"--wide={self.wide}"]
        args += [f"--wide-delay={self.wide_delay}"]
        return args + ([] if self.traps else ["--no-traps"])

    def site(self) -> Any:
        """The Site itself, for its oracle (the definition is the same in every process)."""
        from shared.testsite import Site  # imports aiohttp: only when an oracle is needed

        return Site(
            self.pages,
            self.seed,
            self.fanout,
            latency=self.latency,
            traps=self.traps,
            wide=self.wide,
            wide_delay=self.wide_delay,
        )


class SiteServer:
    """The test site served by ``python -m shared.tools.bench.server`` in a child process.

    The child answers one-line commands on its stdin (see server.py): ``reset`` re-arms
    the site between crawls, ``stats`` returns what the server observed.
    """

    def __init__(self, options: SiteOptions, core: int | None = None) -> None:
        """Start the server and wait until it says where it listens."""
        self.options = options
        argv = [sys.executable, "-m", "shared.tools.bench.server", *options.argv()]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        pin(self.proc.pid, core)
        self.url = str(self._reply().get("url", ""))
        if not self.url:
            self.close()
            raise RuntimeError("the test site server did not start")

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return dict(json.loads(line)) if line else {}

    def command(self, name: str) -> dict[str, Any]:
        """Send one command and return the server's JSON answer."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(name + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def reset(self) -> None:
        """Forget the observations and re-arm the flaky page, before the next crawl."""
        self.command("reset")

    def stats(self) -> dict[str, Any]:
        """What the server saw since the last reset: requests, max_in_flight."""
        return self.command("stats")

    def close(self) -> None:
        """Stop the server: closing its stdin tells it to shut down."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def site_server(options: SiteOptions, core: int | None = None) -> Iterator[SiteServer]:
    """Serve a site in a child process for the duration of the block."""
    server = SiteServer(options, core)
    try:
        yield server
    finally:
        server.close()


# --------------------------------------------------------------------------- the machine


def machine() -> dict[str, Any]:
    """Describe where the figures came from: CPU, cores, Python, system, date."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "fd_limit": fd_limit(),
    }


def ignore_robots_flag() -> list[str]:
    """``["--ignore-robots"]`` when the crawlers' command line has that flag, else ``[]``.

    A benchmark measures fetching the site's pages; a robots.txt request would add a
    record the oracle does not know about.
    """
    from shared.tools.cli import build_parser

    buffer = io.StringIO()
    build_parser("crawler").print_help(buffer)
    return ["--ignore-robots"] if "--ignore-robots" in buffer.getvalue() else []
