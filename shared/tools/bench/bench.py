"""The benchmark: the figures behind the chapter's argument, measured on this machine.

``python -m shared.tools.bench.bench`` (``nox -s bench``) runs five scenarios, each crawler in
turn within every run, and repeats them (--runs, 5 by default) to give medians and
ranges.  The site runs in its own process on one core, the crawler on another.

* S0, the ceiling: how many requests a second the site itself can serve, with a bare
  load client (shared/tools/bench/load.py), with and without keep-alive.  No crawler can
  beat it; a crawler far below it is limited by its own work.
* S1, throughput: a 2,000-page site, no latency, --max-tasks 100: pages per second.
* S2, latency-bound: the same site answering each request after 50 ms.  A crawl cannot
  take less than the level bound, the sum over the site's breadth-first levels of
  ceil(level size / max-tasks) x latency; the figure is the crawl's time over it.  That
  bound counts the latency alone; a crawler pinned to one core must also spend its own
  CPU within the crawl (``cpu_s`` of its --timeline JSON), so a second row gives the
  time over the larger of the two, a floor that counts both.
* S3, many connections: a page linking to 5,000 pages that each take 2 s to answer,
  crawled with --max-tasks 5,000, so that all of them are in flight at once.  Its peak
  memory, less the peak of the same crawl with --max-tasks 10 (on the same pages
  served without the delay, and without writing the JSON, see Bench.wide), divided by
  the most fetches in flight, is what one fetch in flight costs: the chapter's "50k
  per thread, 3k per coroutine".  The records of the finished fetches are in both
  crawls, so they cancel out.  The same at 10,000, where the file-descriptor limit
  allows, checks that nothing is lost.
* S4, the browser tab: what the exercises' site (shared/tools/browser/) costs a class, in
  a new headless Chromium each run: its size and the bytes a first visit fetches, the
  seconds until its Python can check (first visit, then a reload), and a check's seconds
  (the first, then the next).  ``--browser`` measures it alone and adds it to the results
  file, the other scenarios kept (shared/tools/bench/browsertab.py).

The figures go with a description of the machine to out/results.json (--quick:
out/results-quick.json), which git ignores, or to --json PATH.  The README's figures are
shared/tools/bench/results.json: ``--json shared/tools/bench/results.json`` replaces them, and
``--markdown`` prints them as the README's table (or, with --json, another run's).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from shared.language import LANGUAGES, add_help_option, chosen_language, help_in
from shared.tools.bench import pagecost
from shared.tools.bench.independent import AIOHTTP_RACE_TARGET
from shared.tools.bench.measure import (
    CRAWLERS,
    ROOT,
    Crawler,
    Run,
    SiteOptions,
    SiteServer,
    core_pair,
    fd_limit,
    ignore_robots_flag,
    level_bound,
    machine,
    peak_in_flight,
    pin,
    posix_only,
    race_floor,
    run_crawler,
    site_server,
)
from shared.tools.language import Phrasebook

#: The bench's and compare's sentences in Chinese (--lang zh-CN, or a Chinese locale); the
#: tables and the pictures keep their English names, as the pages that quote them do.
BOOK = Phrasebook(Path(__file__).with_name("zh-CN.json"))

#: Where a run writes by default: a folder git ignores, so a run leaves the tree clean.
DEFAULT_JSON = ROOT / "out" / "results.json"
QUICK_JSON = ROOT / "out" / "results-quick.json"
#: The figures behind the README's table and RESULTS.md: written only when --json names it.
COMMITTED_JSON = ROOT / "shared" / "tools" / "bench" / "results.json"

#: What the crawlers are asked to reach (see the issue that set them); never asserted.
TARGETS = {
    "S1": "every stage at least as fast as the threaded baseline",
    "S2": "every stage within 1.05x of the level bound",
    "S3": "stage 1 at most 1 KiB, stage 2 at most 4 KiB (the chapter's coroutine is about 3 KB), "
    "stage 3 at most 10 KiB per fetch in flight",
    "S3 10,000": "every stage completes 10,000 fetches at once, none lost",
    "race": "stages 1 and 2 within 1.5x of the race's floor; stage 3 within "
    f"{AIOHTTP_RACE_TARGET}x of the "
    "floor its library sets, a plain aiohttp session making the same fetches, which "
    "`python -m shared.tools.bench.independent` races (not this table: stage 3's race "
    "is shown here unmarked)",
}
S2_TARGET = 1.05
S3_TARGET_KIB = {"stage1_callbacks": 1.0, "stage2_generators": 4.0, "stage3_asyncio": 10.0}
#: The race against the site's floor, for the stages that speak to sockets themselves.
#: Stage 3's every fetch goes through aiohttp, whose own plain session takes 1.6x this
#: floor: its target is against that session instead (independent.AIOHTTP_RACE_TARGET).
RACE_TARGET = {"stage1_callbacks": 1.5, "stage2_generators": 1.5}


#: The site of S0, S1 and S2 (S2 adds its latency to it): no traps, so every page counts.
BENCH_SITE = SiteOptions(pages=2000, fanout=10, traps=False)


@dataclass(frozen=True)
class Plan:
    """The sizes of one benchmark: the full one, or the quick smoke run."""

    runs: int = 5
    load_seconds: float = 2.0
    site: SiteOptions = BENCH_SITE
    max_tasks: int = 100
    latency: float = 0.05
    # The first size is measured --runs times; the others are checks, run once, as the
    # 10,000 one is the slowest part of the benchmark.
    wide: tuple[int, ...] = (5000, 10000)
    wide_delay: float = 2.0
    baseline_tasks: int = 10


QUICK = Plan(
    runs=1,
    load_seconds=0.5,
    site=replace(BENCH_SITE, pages=300),
    max_tasks=20,
    wide=(300, 600),
    wide_delay=0.5,
)


def over_floor(
    elapsed: Sequence[float | None], cpu: Sequence[float | None], bound: float
) -> list[float | None]:
    """Each crawl's time over the larger of the level bound and its own CPU (None: unknown)."""
    return [
        None if seconds is None or spent is None else round(seconds / max(bound, spent), 4)
        for seconds, spent in zip(elapsed, cpu, strict=True)
    ]


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, minimum and maximum of a scenario's figures over the runs."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


class Bench:
    """Runs the scenarios and collects their figures into one JSON document."""

    def __init__(
        self,
        plan: Plan,
        crawlers: Sequence[Crawler] = CRAWLERS,
        *,
        pin_cores: bool = True,
        quick: bool = False,
        lang: str = "en",
    ) -> None:
        """Prepare a benchmark; nothing runs until :meth:`run`."""
        self.plan = plan
        self.quick = quick
        self.say = functools.partial(BOOK.say, lang=lang)
        self.crawlers = list(crawlers)
        self.site_core, self.crawler_core = core_pair(pin_cores)
        self.robots = ignore_robots_flag()
        # With --ignore-robots the oracle has no robots.txt record either.
        self.oracle: dict[str, Any] = {"ignore_robots": True} if self.robots else {}

    def log(self, text: str) -> None:
        """Say what is happening, on stderr, so stdout keeps the table alone."""
        print(text, file=sys.stderr, flush=True)

    def order(self, run: int) -> list[Crawler]:
        """The crawlers for one run, rotated each run so that none always goes first."""
        shift = run % len(self.crawlers)
        return self.crawlers[shift:] + self.crawlers[:shift]

    def crawl(
        self, crawler: Crawler, server: SiteServer, *args: str, write_json: bool = True
    ) -> Run:
        """One measured crawl of a freshly reset site."""
        server.reset()
        run = run_crawler(
            crawler,
            server.url,
            [*args, *self.robots],
            core=self.crawler_core,
            write_json=write_json,
        )
        if not run.ok:
            self.log(f"  {crawler.name} exited with {run.returncode}: {run.stderr[-2000:]}")
        return run

    def run(self) -> dict[str, Any]:
        """Run every scenario and return the results document."""
        started = time.monotonic()
        doc: dict[str, Any] = {
            "machine": machine(),
            "plan": {
                "runs": self.plan.runs,
                "quick": self.quick,
                "pinned": self.site_core is not None,
            },
            "crawlers": [crawler.name for crawler in self.crawlers],
            "pinned": self.site_core is not None,
            "targets": TARGETS,
        }
        doc["S0"] = self.ceiling()
        doc["S1"] = self.throughput()
        doc["S2"] = self.latency_bound()
        doc["S3"] = self.many_connections()
        doc["S4"] = self.browser_tab()
        doc["seconds"] = round(time.monotonic() - started, 1)
        return doc

    # ----------------------------------------------------------------------- S0

    def ceiling(self) -> dict[str, Any]:
        """S0: the site's own requests per second, with a bare client, both ways."""
        plan = self.plan
        site = plan.site
        self.log(f"S0 ceiling: {site.pages}-page site, bare load client")
        figures: dict[str, list[float]] = {"close": [], "keep_alive": []}
        with site_server(site, self.site_core) as server:
            for _ in range(plan.runs):
                for mode in figures:
                    argv = [sys.executable, "-m", "shared.tools.bench.load", server.url]
                    argv += [f"--pages={site.pages}", f"--seconds={plan.load_seconds}"]
                    argv += ["--keep-alive"] if mode == "keep_alive" else []
                    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
                    pin(proc.pid, self.crawler_core)
                    out, _ = proc.communicate(timeout=plan.load_seconds + 60)
                    figures[mode].append(float(json.loads(out)["per_s"]))
                    self.log(f"  {mode}: {figures[mode][-1]:.0f} requests/s")
        return {
            "site": {"pages": site.pages, "fanout": site.fanout},
            "seconds": plan.load_seconds,
            "close": {"per_s": figures["close"], **summary(figures["close"])},
            "keep_alive": {"per_s": figures["keep_alive"], **summary(figures["keep_alive"])},
        }

    # ----------------------------------------------------------------------- S1, S2

    def site_crawls(self, site: SiteOptions) -> dict[str, Any]:
        """Crawl one site with every crawler, --runs times; keep each crawl's figures."""
        plan = self.plan
        results: dict[str, dict[str, Any]] = {
            c.name: {
                "elapsed_s": [],
                "records": [],
                "same_pages": [],
                "peak_in_flight": [],
                "cpu_s": [],
                "crawl_cpu_s": [],
            }
            for c in self.crawlers
        }
        with site_server(site, self.site_core) as server:
            expected = set(site.site().expected(server.url, **self.oracle))
            levels = site.site().levels(server.url, **self.oracle)
            for number in range(plan.runs):
                for crawler in self.order(number):
                    run = self.crawl(crawler, server, f"--max-tasks={plan.max_tasks}")
                    entry = results[crawler.name]
                    entry["elapsed_s"].append(round(run.elapsed_s, 4) if run.ok else None)
                    entry["records"].append(run.records)
                    entry["same_pages"].append(run.ok and run.urls == expected)
                    entry["peak_in_flight"].append(peak_in_flight(run.timeline) if run.ok else 0)
                    entry["cpu_s"].append(round(run.cpu_s, 3))
                    # The CPU of the crawl itself, over the span of elapsed_s (--timeline).
                    entry["crawl_cpu_s"].append(run.doc.get("cpu_s"))
                    self.log(
                        f"  run {number + 1} {crawler.name}: {run.records} pages "
                        f"in {run.elapsed_s:.3f} s, {run.cpu_s:.2f} s CPU"
                    )
        return {"pages": len(expected), "levels": levels, "results": results}

    def derive(self, doc: dict[str, Any], name: str, figure: Callable[[float, int], float]) -> None:
        """Add ``name``, computed from each crawl's (seconds, records), and its summary."""
        for entry in doc["results"].values():
            values = [
                None if seconds is None else round(figure(seconds, records), 4)
                for seconds, records in zip(entry["elapsed_s"], entry["records"], strict=True)
            ]
            entry[name] = values
            good = [value for value in values if value is not None]
            entry.update(summary(good) if good else {})

    def throughput(self) -> dict[str, Any]:
        """S1: pages per second on a site with no latency."""
        plan = self.plan
        self.log(f"S1 throughput: {plan.site.pages} pages, --max-tasks {plan.max_tasks}")
        doc = self.site_crawls(plan.site)
        self.derive(doc, "pages_per_s", lambda seconds, records: records / seconds)
        doc["max_tasks"] = plan.max_tasks
        return doc

    def latency_bound(self) -> dict[str, Any]:
        """S2: crawl time over the level bound, on a site that answers after a latency."""
        plan = self.plan
        self.log(f"S2 latency-bound: {plan.latency * 1000:g} ms per response")
        doc = self.site_crawls(replace(plan.site, latency=plan.latency))
        bound = level_bound(doc["levels"], plan.max_tasks, plan.latency)
        self.derive(doc, "over_bound", lambda seconds, records: seconds / bound)
        # The level bound counts the latency alone.  The crawler, pinned to one core, must
        # also spend its own CPU within the crawl's time: the larger of the two is a floor
        # that counts both, the crawl's time over it is how close the crawler came to it.
        for entry in doc["results"].values():
            entry["over_floor"] = over_floor(entry["elapsed_s"], entry["crawl_cpu_s"], bound)
        doc.update(max_tasks=plan.max_tasks, latency=plan.latency, level_bound_s=round(bound, 4))
        return doc

    # ----------------------------------------------------------------------- S3

    def many_connections(self) -> dict[str, Any]:
        """S3: memory per fetch in flight, and no fetch lost, with thousands at once."""
        plan = self.plan
        doc: dict[str, Any] = {"delay": plan.wide_delay, "baseline_tasks": plan.baseline_tasks}
        for i, size in enumerate(plan.wide):
            runs = plan.runs if i == 0 else 1
            if size + 200 > fd_limit():
                self.log(f"S3 {size}: skipped, the file-descriptor limit is {fd_limit()}")
                doc[str(size)] = {"skipped": f"file-descriptor limit {fd_limit()}"}
                continue
            self.log(f"S3 {size} fetches of {plan.wide_delay:g} s at once, {runs} run(s)")
            doc[str(size)] = self.wide(size, runs)
        return doc

    def wide(self, size: int, runs: int) -> dict[str, Any]:
        """Crawl ``size`` slow pages all at once, and the same pages ten at a time."""
        plan = self.plan
        slow = SiteOptions(pages=1, traps=False, wide=size, wide_delay=plan.wide_delay)
        fast = replace(slow, wide_delay=0.0)
        results: dict[str, dict[str, Any]] = {
            c.name: {
                "rss_kib": [],
                "baseline_rss_kib": [],
                "peak_in_flight": [],
                "kib_per_fetch": [],
                "seconds": [],
                "complete": [],
                "lost": [],
                "cpu_s": [],
            }
            for c in self.crawlers
        }
        with site_server(slow, self.site_core) as busy, site_server(fast, self.site_core) as calm:
            expected = set(slow.site().expected(busy.url, **self.oracle))
            for number in range(runs):
                for crawler in self.order(number):
                    wide = self.crawl(crawler, busy, f"--max-tasks={size}")
                    # Without --json: building the JSON document at the end of a crawl of
                    # thousands of pages is a peak of its own, which the wide crawl hides
                    # behind its in-flight peak (the memory freed by the fetches is reused
                    # for it) but the baseline would not.
                    base = self.crawl(
                        crawler, calm, f"--max-tasks={plan.baseline_tasks}", write_json=False
                    )
                    peak = peak_in_flight(wide.timeline) if wide.timeline else 0
                    per_fetch = (wide.peak_rss_kib - base.peak_rss_kib) / peak if peak else 0.0
                    ok = {f["url"] for f in wide.doc.get("fetches", []) if f["status"] == 200}
                    entry = results[crawler.name]
                    entry["rss_kib"].append(wide.peak_rss_kib)
                    entry["baseline_rss_kib"].append(base.peak_rss_kib)
                    entry["peak_in_flight"].append(peak)
                    entry["kib_per_fetch"].append(round(per_fetch, 3))
                    entry["seconds"].append(round(wide.elapsed_s, 3))
                    entry["complete"].append(wide.ok and ok == expected)
                    entry["lost"].append(len(expected - ok))
                    entry["cpu_s"].append(round(wide.cpu_s, 3))
                    self.log(
                        f"  run {number + 1} {crawler.name}: {per_fetch:.2f} KiB per fetch, "
                        f"peak {peak}, {len(ok)}/{len(expected)} answered in {wide.elapsed_s:.1f} s"
                    )
        for entry in results.values():
            entry["summary"] = summary(entry["kib_per_fetch"])
        return {"fetches": len(expected), "results": results}

    # ----------------------------------------------------------------------- S4

    def browser_tab(self) -> dict[str, Any]:
        """S4: the browser site's size, its first load and a reload, a check cold and warm."""
        # Imported here: browsertab imports summary() from this module.
        from shared.tools.bench import browsertab

        say, runs = self.say, self.plan.runs
        self.log(say("S4 the browser tab: {} run(s), each in a new headless Chromium").format(runs))

        def progress(number: int, run: browsertab.TabRun) -> None:
            line = say(
                "  run {}: Python ready after {:.1f} s, {:.1f} s on a reload; "
                "a check {:.2f} s, the next {:.2f} s"
            )
            self.log(
                line.format(
                    number, run.ready_cold_s, run.ready_warm_s, run.check_cold_s, run.check_warm_s
                )
            )

        part = browsertab.measure(runs, progress=progress)
        if "skipped" in part:
            self.log(say("S4: skipped, {}").format(part["skipped"]))
        return part


# --------------------------------------------------------------------------- the tables


def cell(stats: dict[str, Any], fmt: str, suffix: str = "") -> str:
    """Format "median (min-max)" for one crawler's figure."""
    if "median" not in stats:
        return "failed"
    mid, lo, hi = (format(stats[key], fmt) for key in ("median", "min", "max"))
    return f"{mid}{suffix} ({lo}-{hi})" if lo != hi else f"{mid}{suffix}"


def mark(met: bool | None) -> str:
    """A check mark for a target met, a cross for one missed, nothing where none applies."""
    return "" if met is None else (" ✓" if met else " ✗")


def cpu_row(scenario: str, part: dict[str, Any], names: Sequence[str]) -> str:
    """The table row of a scenario's crawler CPU per page: CPU time over pages, median."""
    row = [f"{scenario} crawler CPU, ms per page (whole process, start-up included)"]
    for name in names:
        entry = part["results"][name]
        pairs = zip(entry.get("cpu_s", []), entry.get("records", []), strict=False)
        per_page = [cpu / pages * 1000 for cpu, pages in pairs if pages]
        row.append(f"{statistics.median(per_page):.2f}" if per_page else "-")
    return "| " + " | ".join(row) + " |"


def s2_floor_rows(s2: dict[str, Any], names: Sequence[str]) -> list[str]:
    """S2's rows of the crawl's own CPU, and its time over the floor that counts that CPU.

    Results written before the crawls noted their CPU (``crawl_cpu_s``) have no such rows.
    """
    entries = [s2["results"][name] for name in names]
    if not all(any(v is not None for v in e.get("crawl_cpu_s", [])) for e in entries):
        return []
    cpu = ["S2 the crawl's own CPU, s (first fetch to last record, start-up excluded)"]
    over = ["S2 time / the larger of the level bound and the crawl's own CPU"]
    for entry in entries:
        cpu.append(f"{statistics.median(v for v in entry['crawl_cpu_s'] if v is not None):.2f}")
        good = [v for v in entry["over_floor"] if v is not None]
        over.append(cell(summary(good), ".2f", "x") if good else "-")
    return ["| " + " | ".join(cpu) + " |", "| " + " | ".join(over) + " |"]


def duration(seconds: float) -> str:
    """A run's length, as a reader plans for it: "7 minutes", "50 seconds"."""
    if seconds >= 90:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def markdown(doc: dict[str, Any]) -> str:
    """Render a results document as the README's markdown: the machine, the table, targets;
    then S4, the browser tab, where the document has it (a file --browser made may hold S4
    alone)."""
    parts = [crawlers_markdown(doc)] if "S0" in doc else []
    if "S4" in doc:
        parts.append(tab_markdown(doc["S4"]))
    return "\n".join(parts)


def crawlers_markdown(doc: dict[str, Any]) -> str:
    """The machine, the crawlers' table (S0 to S3) and their targets."""
    m, names = doc["machine"], doc["crawlers"]
    runs = doc["plan"]["runs"]
    s0, s1, s2, s3 = doc["S0"], doc["S1"], doc["S2"], doc["S3"]
    out = [
        f"Measured on {m['cpu']}, {m['cores']} cores, {m['implementation']} {m['python']}, "
        f"{m['system']}, {m['date']}; {runs} run(s) of each, median (min-max)"
        + (", site and crawler pinned to separate cores." if doc["pinned"] else ".")
        + (f" The run took {duration(doc['seconds'])}." if "seconds" in doc else ""),
        "",
        f"S0, the ceiling (the site alone, a bare load client, {s0['site']['pages']:,} pages): "
        f"{cell(s0['close'], ',.0f')} requests/s with a new connection per request, "
        f"{cell(s0['keep_alive'], ',.0f')} with keep-alive.",
        "",
        "| scenario | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    threaded = s1["results"].get("threaded", {}).get("median")
    row = [f"S1 pages/s ({s1['pages']:,} pages, --max-tasks {s1['max_tasks']})"]
    for name in names:
        stats = s1["results"][name]
        met = None if threaded is None or name == "threaded" else stats["median"] >= threaded
        row.append(cell(stats, ",.0f") + mark(met if "median" in stats else False))
    out.append("| " + " | ".join(row) + " |")
    out.append(cpu_row("S1", s1, names))
    # Beside the pages per second, what bounds them from above: the site's own rate with a
    # new connection per request (S0), as every crawler here opens one per fetch.
    ceiling = s0["close"]["median"]
    row = [f"S1 pages/s over the site's ceiling ({ceiling:,.0f} new connections/s, S0)"]
    for name in names:
        stats = s1["results"][name]
        row.append(f"{stats['median'] / ceiling:.2f}" if "median" in stats else "-")
    out.append("| " + " | ".join(row) + " |")
    bound = f"{s2['latency'] * 1000:g} ms, bound {s2['level_bound_s']:.2f} s"
    row = [f"S2 time / level bound ({bound})"]
    for name in names:
        stats = s2["results"][name]
        met = None if name == "threaded" else stats.get("median", 99) <= S2_TARGET
        row.append(cell(stats, ".2f", "x") + mark(met))
    out.append("| " + " | ".join(row) + " |")
    # Next to the time over the bound: if CPU per page times the pages is near the crawl's
    # time, the crawler was waiting for its own CPU rather than for the site.
    out.append(cpu_row("S2", s2, names))
    out += s2_floor_rows(s2, names)
    measured = [size for size, part in s3.items() if isinstance(part, dict) and "results" in part]
    for size, part in s3.items():
        if not isinstance(part, dict) or "results" not in part:
            if isinstance(part, dict) and "skipped" in part:
                out.append(f"| S3 {int(size):,} at once | skipped: {part['skipped']} |")
            continue
        results = part["results"]
        row = [f"S3 KiB per fetch in flight ({int(size):,} at once)"]
        for name in names:
            stats = results[name]["summary"]
            # The memory targets are set at the first size (5,000), measured --runs times.
            target = S3_TARGET_KIB.get(name) if size == measured[0] else None
            met = None if target is None else stats["median"] <= target
            # Two decimals: a figure just over its target must not print as the target.
            row.append(cell(stats, ".2f") + mark(met))
        out.append("| " + " | ".join(row) + " |")
        row = [f"S3 peak RSS MiB at {int(size):,} / at {s3['baseline_tasks']}"]
        for name in names:
            wide = statistics.median(results[name]["rss_kib"]) / 1024
            base = statistics.median(results[name]["baseline_rss_kib"]) / 1024
            row.append(f"{wide:.1f} / {base:.1f}")
        out.append("| " + " | ".join(row) + " |")
        row = [f"S3 answered of {part['fetches']:,}; peak in flight; seconds"]
        for name in names:
            entry = results[name]
            lost = max(entry["lost"])
            done = f"all{mark(True)}" if all(entry["complete"]) else f"{lost:,} lost{mark(False)}"
            peak = min(entry["peak_in_flight"])
            seconds = statistics.median(entry["seconds"])
            row.append(f"{done}; {peak:,}; {seconds:.1f} s")
        out.append("| " + " | ".join(row) + " |")
        if "delay" in s3:
            floor = race_floor(s3["delay"], int(size), ceiling)
            row = [f"S3 seconds / the race's floor ({floor:.2f} s at {int(size):,})"]
            for name in names:
                over = statistics.median(results[name]["seconds"]) / floor
                # The race's target is set at the largest size (10,000).
                judged = name in RACE_TARGET and size == measured[-1]
                row.append(f"{over:.2f}x" + mark(over <= RACE_TARGET[name] if judged else None))
            out.append("| " + " | ".join(row) + " |")
        # Beside the race, what the crawler's own CPU asks for: a crawler whose CPU time
        # nears its time over the floor was waiting for itself, not for the site.
        if all(results[name].get("cpu_s") for name in names):
            row = [f"S3 crawler CPU seconds at {int(size):,} (whole process)"]
            row += [f"{statistics.median(results[name]['cpu_s']):.1f}" for name in names]
            out.append("| " + " | ".join(row) + " |")
    out += [
        "",
        "Targets (✓ met, ✗ missed): " + "; ".join(TARGETS.values()) + ".  The race's floor: "
        "one response's delay, plus the time the site takes to accept that many new "
        "connections at its S0 rate; no crawler can finish sooner.",
    ]
    return "\n".join(out) + "\n"


def amount(stats: dict[str, Any]) -> str:
    """A number of bytes' "median (min-max)", in MB (10^6 bytes), or in kB below one MB."""
    unit, scale = ("MB", 1e6) if stats["median"] >= 1e6 else ("kB", 1e3)
    scaled = {key: stats[key] / scale for key in ("median", "min", "max")}
    return cell(scaled, ".1f" if unit == "MB" else ".0f", f" {unit}")


def tab_markdown(part: dict[str, Any]) -> str:
    """S4's paragraph: the browser tab is not a crawler, so it is not a column of the table."""
    if "skipped" in part:
        return f"S4, the browser tab: skipped: {part['skipped']}.\n"
    width, height = part["window"]
    setting = [
        f"Chromium {part['browser']['version']}, headless, {width}x{height}, the site served "
        "from 127.0.0.1, so that no network's time is in it",
        f"{part['runs']} run(s), each in a new browser with nothing cached, median (min-max)",
    ]
    if "machine" in part:  # measured on its own, with --browser: its machine and day
        m = part["machine"]
        setting.append(f"measured on {m['cpu']}, {m['cores']} cores, {m['system']}, {m['date']}")
    files, size = part["site"]["files"], part["site"]["bytes"] / 1e6
    return (
        f"S4, the browser tab ({'; '.join(setting)}): the site is {size:.1f} MB in {files} "
        f"files, and a first visit fetched {amount(part['first_bytes'])} from the server in "
        f"{cell(part['first_files'], '.0f')} responses.  Python was ready to check "
        f"{cell(part['ready_cold_s'], '.1f', ' s')} after the page was asked for; on a "
        f"reload, with the site kept by the browser and {amount(part['reload_bytes'])} "
        f"fetched, {cell(part['ready_warm_s'], '.1f', ' s')}.  A check of {part['exercise']}'s "
        f"fresh files took {cell(part['check_cold_s'], '.2f', ' s')} the first time (pytest "
        f"imported) and {cell(part['check_warm_s'], '.2f', ' s')} the next.\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; with --browser, S4 alone; with --markdown, print a results file."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = chosen_language(argv)  # read first, so that --help speaks it too
    say = functools.partial(BOOK.say, lang=lang)
    parser = argparse.ArgumentParser(
        prog="python -m shared.tools.bench.bench",
        **help_in(
            lang, description=say("The benchmark: the figures behind the chapter's argument.")
        ),
    )
    add_help_option(parser, lang)
    parser.add_argument("--lang", choices=LANGUAGES, help=say("the language it speaks"))
    parser.add_argument("--runs", type=int, help=say("runs of each scenario (5; --quick: 1)"))
    parser.add_argument("--quick", action="store_true", help=say("small sizes: a smoke run"))
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help=say(
            "results file (out/results.json; --quick: out/results-quick.json; --markdown: "
            "the README's, shared/tools/bench/results.json, which a run writes only when "
            "named here)"
        ),
    )
    parser.add_argument(
        "--markdown", action="store_true", help=say("print the results as markdown")
    )
    parser.add_argument("--no-pin", action="store_true", help=say("do not pin to separate cores"))
    parser.add_argument(
        "--browser",
        action="store_true",
        help=say(
            "measure S4, the browser tab, alone, and add it to the results file (--json), "
            "keeping the other scenarios there"
        ),
    )
    args = parser.parse_args(argv)
    if args.markdown:
        path = args.json or COMMITTED_JSON
        print(markdown(json.loads(path.read_text(encoding="utf-8"))), end="")
        return 0
    # Only a run told so replaces the figures the README's table is made from.
    args.json = args.json or (QUICK_JSON if args.quick else DEFAULT_JSON)
    plan = QUICK if args.quick else Plan()
    if args.runs is not None:
        if args.runs < 1:
            parser.error(say("--runs must be >= 1"))
        plan = replace(plan, runs=args.runs)
    if args.browser:
        return add_browser_tab(Bench(plan, pin_cores=False, quick=args.quick, lang=lang), args.json)
    posix_only("python -m shared.tools.bench.bench")
    doc = Bench(plan, pin_cores=not args.no_pin, quick=args.quick, lang=lang).run()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(markdown(doc), end="")
    # The robots.txt check, offline: its cost per URL on a small file and a 500 KiB one.
    print("\n" + pagecost.robots_table(pagecost.robots_cost()))
    print(say("\n{:.0f} s; results in {}").format(doc["seconds"], args.json), file=sys.stderr)
    return 0


def add_browser_tab(bench: Bench, path: Path) -> int:
    """Measure S4 alone and put it in the results file at ``path``, its other parts kept.

    S4 notes its own machine and day, as the rest of the file may be older.  A skipped S4
    changes nothing in the file: the figures it holds are not replaced by a reason.
    """
    started = time.monotonic()
    part = bench.browser_tab()
    if "skipped" in part:
        return 1
    part["machine"] = machine()
    part["seconds"] = round(time.monotonic() - started, 1)
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    doc["S4"] = part
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(tab_markdown(part), end="")
    print(bench.say("\n{:.0f} s; S4 added to {}").format(part["seconds"], path), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
