"""Inside one crawler: where its memory, its CPU and its time go, with what load does not distort.

``python -m shared.tools.bench.inside WHAT CRAWLER`` serves a test site in a child process
(shared/tools/bench/server.py) and runs one crawler in this process, where it can be
looked into.  CRAWLER is a stage's package or ``shared.tools.bench.threaded``.

* ``memory``: the benchmark's S3, looked into.  ``--fetches`` pages that each answer after
  ``--delay`` seconds, all fetched at once.  When the site has them all in flight,
  tracemalloc compares the Python objects the crawler holds with those it held before
  the crawl, and prints the difference per fetch in flight, by line (where each object
  was allocated), by package, and by type (the objects the garbage collector tracks,
  sized with sys.getsizeof).  It counts Python objects only: the allocator's slack and
  a thread's stack are in the benchmark's figure (peak RSS), not here.
* ``cpu``: the benchmark's S1, looked into.  The site's ``--pages`` pages with no
  latency, ``--max-tasks`` at a time: the crawl's own CPU time per page (process time
  from the call to the result, without start-up), the best and the median of
  ``--repeat`` crawls; then one crawl under cProfile (timed in CPU time), its functions
  by own time and its time by package.  cProfile adds a cost to each call: read it for
  where the time goes, and the first figures for how much.
* ``levels``: the benchmark's S2, looked into.  The same site answering each request
  after ``--latency`` seconds.  Each URL's level is the level of the page whose record
  queued it, plus one.  Per level: its pages, when its first fetch began and its last
  ended, the CPU the process spent meanwhile, the new connections made (a try of a
  fetch that had its connection), and what the level bound allows it,
  ceil(pages / max-tasks) x latency, and the mean time of its fetches, from each one's
  start to its record (the latency, plus connecting, the site's and the crawler's own
  work, and any wait for the CPU in between) and of its connecting alone.  A watcher of
  connections makes stage 3 add aiohttp's tracing hooks: its CPU here is a little more
  than in the benchmark.  The site is not pinned to a core of its own here: the times
  are a quiet machine's only on a quiet machine; the CPU and the counts are any machine's.

Every figure is one run's: the commands are what RESULTS.md quotes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import math
import pstats
import statistics
import sys
import threading
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from shared.crawling import Options
from shared.tools.bench.measure import SiteOptions, SiteServer, posix_only
from shared.tools.instruments import watching
from shared.tools.instruments.connections import Connections

Crawl = Callable[[Sequence[str], Options], Any]


def crawl_function(module: str) -> Crawl:
    """The ``crawl(roots, options)`` of a stage's package or of the threaded baseline."""
    name = module if module.startswith("shared.") else f"{module}.crawler"
    function: Crawl = importlib.import_module(name).crawl
    return function


def quiet() -> None:
    """Errors only, as the benchmark runs each crawler (``-q``)."""
    from shared.tools.cli import configure_logging

    configure_logging(0, True)


def package_of(filename: str) -> str:
    """A source file's package, for totals: aiohttp, asyncio, stage2_generators, shared..."""
    parts = Path(filename).parts
    for name in ("site-packages", "stage1_callbacks", "stage2_generators", "stage3_asyncio"):
        if name in parts:
            i = parts.index(name)
            return parts[i + 1] if name == "site-packages" else name
    if "shared" in parts:
        return "shared"
    if "asyncio" in parts:
        return "asyncio"
    return "the standard library" if filename.startswith(sys.base_prefix) else filename


# --------------------------------------------------------------------------- memory


def type_sizes() -> Counter[str]:
    """Bytes of each type among the objects the garbage collector tracks, by sys.getsizeof."""
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        sizes[type(obj).__qualname__] += sys.getsizeof(obj)
    return sizes


def memory(
    crawl: Crawl, fetches: int, delay: float, top: int, when_requests: int = 0
) -> tuple[float, float]:
    """Print what one fetch in flight holds: tracemalloc's difference per fetch.

    With ``when_requests``, the objects are compared once the site has had that many
    requests, rather than once every fetch waits: to look at the fetches still connecting.
    Return the bytes per fetch then, and at the crawl's peak.
    """
    site = SiteOptions(pages=1, traps=False, wide=fetches, wide_delay=delay)
    server = SiteServer(site)
    found: dict[str, Any] = {}
    samples: list[tuple[float, int, int]] = []  # (seconds, bytes traced, requests at the site)
    crawled = threading.Event()

    def watch() -> None:
        # The site's count of requests in flight says when every fetch waits for its answer;
        # meanwhile, the Python objects traced are sampled, to see when their peak came.
        started = time.monotonic()
        while not crawled.is_set():
            stats = server.stats()
            now = time.monotonic() - started
            samples.append((now, tracemalloc.get_traced_memory()[0], stats["requests"]))
            ready = (
                stats["requests"] >= when_requests
                if when_requests
                else (stats["max_in_flight"] >= fetches)
            )
            if "snapshot" not in found and ready:
                if not when_requests:
                    time.sleep(delay / 10)  # the last requests' senders settle into their wait
                gc.collect()
                found["in_flight"], found["at"] = server.stats()["max_in_flight"], now
                found["snapshot"] = tracemalloc.take_snapshot()
                found["types"] = type_sizes()
            time.sleep(0.02)

    try:
        quiet()
        options = Options(max_tasks=fetches + 10, ignore_robots=True, timeout=delay * 4)
        crawl([server.url], Options(ignore_robots=True, max_pages=1))  # the root: imports done
        server.reset()
        tracemalloc.start()
        gc.collect()
        before, types_before = tracemalloc.take_snapshot(), type_sizes()
        start_bytes = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        result = crawl([server.url], options)
        crawled.set()
        watcher.join()
        peak_bytes = tracemalloc.get_traced_memory()[1] - start_bytes
        tracemalloc.stop()
    finally:
        server.close()
    if "snapshot" not in found:
        raise SystemExit(f"the site never had {fetches} requests in flight: try a longer --delay")
    ok = sum(1 for stat in result.fetches if stat.status == 200)
    print(
        f"{ok} of {fetches + 1} answered; looked at {found['at']:.2f} s, "
        f"with {found['in_flight']} in flight at the site"
    )
    diff = found["snapshot"].compare_to(before, "lineno")
    total = sum(stat.size_diff for stat in diff)
    print(f"\nPython objects per fetch in flight: {total / fetches:,.0f} bytes (tracemalloc)")
    print(f"The crawl's peak of Python objects, per fetch: {peak_bytes / fetches:,.0f} bytes")
    when, most, requests = max(samples, key=lambda sample: sample[1])
    print(
        f"  (sampled every 20 ms: the most, {(most - start_bytes) / fetches:,.0f} bytes per fetch, "
        f"came at {when:.2f} s, when the site had had {requests} requests; "
        f"looked at {found['at']:.2f} s)"
    )
    print(f"\nBy line, the {top} largest (bytes per fetch, objects per fetch):")
    for stat in sorted(diff, key=lambda s: -s.size_diff)[:top]:
        frame = stat.traceback[0]
        where = f"{package_of(frame.filename)}: {Path(frame.filename).name}:{frame.lineno}"
        print(f"  {stat.size_diff / fetches:8,.0f}  {stat.count_diff / fetches:5.1f}  {where}")
    packages: Counter[str] = Counter()
    for stat in diff:
        packages[package_of(stat.traceback[0].filename)] += stat.size_diff
    print("\nBy package (bytes per fetch):")
    for name, size in packages.most_common():
        if abs(size) / fetches >= 1:
            print(f"  {size / fetches:8,.0f}  {name}")
    grown = found["types"]
    grown.subtract(types_before)
    print(f"\nBy type, the {top} largest (objects the collector tracks, bytes per fetch):")
    for name, size in grown.most_common(top):
        print(f"  {size / fetches:8,.0f}  {name}")
    return total / fetches, peak_bytes / fetches


# --------------------------------------------------------------------------- cpu


def cpu(crawl: Crawl, pages: int, max_tasks: int, repeat: int, top: int) -> None:
    """Print the crawl's CPU per page, then where cProfile finds it goes."""
    server = SiteServer(SiteOptions(pages=pages, fanout=10, traps=False))
    options = Options(max_tasks=max_tasks, ignore_robots=True)
    per_page: list[float] = []
    try:
        quiet()
        crawl([server.url], Options(max_tasks=2, ignore_robots=True, max_pages=20))  # warm
        for _ in range(repeat):
            server.reset()
            gc.collect()
            started = time.process_time()
            result = crawl([server.url], options)
            per_page.append((time.process_time() - started) / len(result.fetches) * 1e6)
        if top:
            server.reset()
            gc.collect()
            profile = cProfile.Profile(time.process_time)
            profile.enable()
            result = crawl([server.url], options)
            profile.disable()
    finally:
        server.close()
    count = len(result.fetches)
    print(
        f"{count} pages, --max-tasks {max_tasks}: CPU per page {min(per_page):.0f} µs (best of "
        f"{repeat}), median {statistics.median(per_page):.0f} µs"
    )
    if not top:
        return
    stats = pstats.Stats(profile)
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    whole = sum(row[2] for row in table.values())
    print(f"\nUnder cProfile: {whole / count * 1e6:.0f} µs per page of own time in all")
    print(f"\nBy own time, the {top} largest (calls per page, own µs per page, cumulative µs):")
    rows = sorted(table.items(), key=lambda item: -item[1][2])[:top]
    for (filename, line, name), (_, calls, own, cumulative, _) in rows:
        where = f"{package_of(filename)}: {Path(filename).name}:{line} {name}"
        if filename == "~":
            where = name
        print(
            f"  {calls / count:6.1f}  {own / count * 1e6:6.1f}"
            f"  {cumulative / count * 1e6:7.1f}  {where}"
        )
    packages: Counter[str] = Counter()
    for (filename, _, _), row in table.items():
        packages["C functions" if filename == "~" else package_of(filename)] += row[2]
    print("\nOwn time by package (µs per page, share):")
    for name, own in packages.most_common(12):
        print(f"  {own / count * 1e6:6.1f}  {own / whole:4.0%}  {name}")


# --------------------------------------------------------------------------- levels


class LevelWatcher(Connections):
    """Notes, per URL, its level and when it began and ended, in wall and CPU time."""

    def __init__(self) -> None:
        """Nothing seen yet; the first fetch to begin is the root, at level 0."""
        self.level: dict[str, int] = {}
        self.found: list[str] = []  # queued by the record that comes next
        self.events: list[tuple[str, str, float, float]] = []  # (what, url, wall, cpu)

    def note(self, what: str, url: str) -> None:
        """Keep one event with its moment, in wall-clock and in the process's CPU time."""
        self.events.append((what, url, time.perf_counter(), time.process_time()))

    def queued(self, url: str) -> None:
        """A link found by the page about to be recorded."""
        self.found.append(url)

    def fetch_started(self, url: str) -> None:
        """A fetch begins (the root has no parent: level 0)."""
        self.level.setdefault(url, 0)
        self.note("start", url)

    def connected(self, url: str) -> None:
        """A try has its new connection."""
        self.note("connect", url)

    def fetch_finished(self, url: str) -> None:
        """url is recorded: what its record queued is one level deeper."""
        for link in self.found:
            self.level.setdefault(link, self.level.get(url, 0) + 1)
        self.found.clear()
        self.note("end", url)


def levels(
    crawl: Crawl, pages: int, max_tasks: int, latency: float
) -> dict[int, defaultdict[str, float]]:
    """Print, per level of the site, its time, its CPU and its connections, beside the bound.

    Return the figures per level: ``end`` (its pages), ``connect`` (its new connections),
    ``first`` and ``last`` (seconds), ``first_cpu`` and ``last_cpu`` (CPU seconds),
    ``fetch_s`` (the sum of its fetches' times), ``connect_s`` (of their times to connect).
    """
    site = SiteOptions(pages=pages, fanout=10, traps=False, latency=latency)
    server = SiteServer(site)
    watcher = LevelWatcher()
    try:
        quiet()
        crawl([server.url], Options(max_tasks=2, ignore_robots=True, max_pages=20))  # warm
        server.reset()
        gc.collect()
        with watching(watcher):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            result = crawl([server.url], Options(max_tasks=max_tasks, ignore_robots=True))
            wall1, cpu1 = time.perf_counter(), time.process_time()
    finally:
        server.close()
    per_level: dict[int, defaultdict[str, float]] = {}
    began: dict[str, float] = {}
    for what, url, wall, cpu_s in watcher.events:
        entry = per_level.setdefault(watcher.level.get(url, 0), defaultdict(float))
        entry[what] += 1
        if what == "start":
            began[url] = wall
        if what == "connect":  # connecting: from the fetch's start to its connection
            entry["connect_s"] += wall - began.get(url, wall)
        if what == "end":  # a fetch's own time: from its start to its record
            entry["fetch_s"] += wall - began.pop(url, wall)
        if what == "start" and "first" not in entry:
            entry["first"], entry["first_cpu"] = wall - wall0, cpu_s - cpu0
        if what == "end":
            entry["last"], entry["last_cpu"] = wall - wall0, cpu_s - cpu0
    print(
        f"{len(result.fetches)} pages, --max-tasks {max_tasks}, {latency * 1000:g} ms a response: "
        f"{wall1 - wall0:.3f} s, {cpu1 - cpu0:.3f} s of CPU "
        f"({(cpu1 - cpu0) / len(result.fetches) * 1e6:.0f} µs a page)"
    )
    print(
        "\nlevel  pages  connections  first start  last end  span s  bound s  CPU in span s"
        "  fetch ms  connect ms"
    )
    bound = 0.0
    for level in sorted(per_level):
        e = per_level[level]
        rounds = math.ceil(e["end"] / max_tasks) * latency
        bound += rounds
        span = e["last"] - e["first"]
        print(
            f"{level:5}  {e['end']:5.0f}  {e['connect']:11.0f}"
            f"  {e['first']:11.3f}  {e['last']:8.3f}"
            f"  {span:6.3f}  {rounds:7.2f}  {e['last_cpu'] - e['first_cpu']:13.3f}"
            f"  {e['fetch_s'] / e['end'] * 1000:8.1f}"
            f"  {e['connect_s'] / max(e['connect'], 1) * 1000:10.1f}"
        )
    crawl_cpu = cpu1 - cpu0
    print(
        f"\nlevel bound {bound:.2f} s; the crawl's CPU {crawl_cpu:.2f} s; the larger of the two "
        f"{max(bound, crawl_cpu):.2f} s; the crawl took {wall1 - wall0:.2f} s, "
        f"{(wall1 - wall0) / bound:.2f}x the level bound"
    )
    return per_level


def main(argv: Sequence[str] | None = None) -> int:
    """Look inside one crawler: memory, cpu or levels."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.tools.bench.inside", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("what", choices=["memory", "cpu", "levels"])
    parser.add_argument("crawler", help="stage1_callbacks, ..., or shared.tools.bench.threaded")
    parser.add_argument("--fetches", type=int, default=2000, help="memory: fetches at once")
    parser.add_argument("--delay", type=float, default=8.0, help="memory: seconds per answer")
    parser.add_argument(
        "--when-requests",
        type=int,
        default=0,
        metavar="N",
        help="memory: look once the site "
        "has had N requests (default: once every fetch waits for its answer)",
    )
    parser.add_argument("--pages", type=int, default=2000, help="cpu, levels: the site's pages")
    parser.add_argument("--max-tasks", type=int, default=100, help="cpu, levels (100)")
    parser.add_argument("--latency", type=float, default=0.05, help="levels: seconds (0.05)")
    parser.add_argument("--repeat", type=int, default=3, help="cpu: crawls timed (3)")
    parser.add_argument(
        "--top", type=int, default=15, help="rows per table (15; cpu: 0, no profile)"
    )
    args = parser.parse_args(argv)
    posix_only("python -m shared.tools.bench.inside")
    crawl = crawl_function(args.crawler)
    if args.what == "memory":
        memory(crawl, args.fetches, args.delay, args.top, args.when_requests)
    elif args.what == "cpu":
        cpu(crawl, args.pages, args.max_tasks, args.repeat, args.top)
    else:
        levels(crawl, args.pages, args.max_tasks, args.latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
