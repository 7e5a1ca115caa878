"""Side by side: the three stages and the threaded baseline crawl one site; a table, four pictures.

``python -m shared.tools.bench.compare [options]`` (``nox -s compare -- [options]``) serves one
test site in a process of its own, crawls it with each crawler in turn, each in its own
process with the same options, and prints for each: the pages it found, whether they are
the oracle's page set, its time and pages per second, the most URLs it had queued and
the most fetches it had in flight at once (from its timeline), what a fetch in flight
costs it in memory (from the benchmark's results), its peak memory on this crawl (not on
Windows, which has no fork() to measure it with: it says so and leaves it out) and the
lines of code it took.  Then it draws four pictures (see svg.py and figures.py):

* compare.svg: each crawl's fetches over time, queued, connecting and reading;
* memory.svg: memory per fetch in flight, from the benchmark's results file;
* race.svg: the benchmark's race of 10,000 slow fetches at once, from the same file;
* latency.svg: the benchmark's latency-bound crawl (S2) against its level bound.

They go to out/, which git ignores, or to --out DIR.  ``--readme`` redraws the README's
own, in shared/tools/bench/, from the committed results (shared/tools/bench/results.json; another
with --results PATH).

Site options (--pages, --latency, ...) shape the site; crawler options (--max-tasks,
--max-tries, --timeout, ...) are passed to every crawler alike.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from shared.language import LANGUAGES, add_help_option, chosen_language, help_in
from shared.tools.bench.bench import BOOK, COMMITTED_JSON
from shared.tools.bench.figures import kib_per_fetch, latency_svg, memory_svg, race_svg, s3_sizes
from shared.tools.bench.measure import (
    CRAWLERS,
    ROOT,
    Crawler,
    Run,
    SiteOptions,
    core_pair,
    count_lines,
    ignore_robots_flag,
    memory_measurable,
    page_set_difference,
    peak_in_flight,
    run_crawler,
    site_server,
)
from shared.tools.bench.phases import has_connect_times, peak_queued, phase_steps
from shared.tools.bench.svg import Lane, render

#: Where the pictures go by default: a folder git ignores, so a run leaves the tree clean.
DEFAULT_OUT = ROOT / "out"
#: The README's pictures, redrawn only by --readme (or --out naming this folder).
README_OUT = ROOT / "shared" / "tools" / "bench"
#: The pictures' file names, in either folder.
PICTURES = ("compare.svg", "memory.svg", "race.svg", "latency.svg")
DEFAULT_SVG = DEFAULT_OUT / PICTURES[0]


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    crawler: str
    pages: int
    same_pages: str  # "yes", or "+N -M" against the oracle, or why the crawl failed
    seconds: float
    pages_per_s: float
    peak_queued: int  # URLs found and not yet begun: waiting, not in flight
    peak_in_flight: int  # fetches begun and not ended: connecting or reading
    kib_per_fetch: float | None  # from the benchmark's results: one fetch in flight's memory
    peak_rss_mib: float | None  # None where it cannot be measured (Windows)
    lines: int


def run_phases(run: Run) -> list[list[object]]:
    """[url, queued, connected] per fetch, as the crawl's JSON has them (none: an older JSON)."""
    return list(run.doc.get("phases", []))


def row_for(run: Run, expected: set[str], kib: dict[str, float] | None = None) -> Row:
    """Sum up one crawler's run against the oracle's page set; ``kib`` by crawler name."""
    same = page_set_difference(run.urls, expected) if run.ok else f"failed ({run.returncode})"
    steps = phase_steps(run.timeline, run_phases(run))
    return Row(
        crawler=run.crawler.name,
        pages=run.records,
        same_pages=same,
        seconds=round(run.elapsed_s, 3),
        pages_per_s=round(run.records / run.elapsed_s, 1) if run.elapsed_s > 0 else 0.0,
        peak_queued=peak_queued(steps),
        peak_in_flight=peak_in_flight(run.timeline) if run.timeline else 0,
        kib_per_fetch=(kib or {}).get(run.crawler.name),
        peak_rss_mib=round(run.peak_rss_kib / 1024, 1) if memory_measurable() else None,
        lines=count_lines(run.crawler.files),
    )


HEADERS = (
    "crawler",
    "pages",
    "same pages",
    "time s",
    "pages/s",
    "peak queued",
    "peak in flight",
    "KiB/fetch",
    "peak RSS MiB",
    "lines",
)


def format_table(rows: Sequence[Row]) -> str:
    """Return the rows as an aligned plain-text table: names left, numbers right.

    The peak RSS column is left out when no row has it (where memory cannot be measured).
    """
    cells = [list(HEADERS)] + [
        [
            row.crawler,
            str(row.pages),
            row.same_pages,
            f"{row.seconds:.2f}",
            f"{row.pages_per_s:.0f}",
            str(row.peak_queued),
            str(row.peak_in_flight),
            "-" if row.kib_per_fetch is None else f"{row.kib_per_fetch:.1f}",
            "-" if row.peak_rss_mib is None else f"{row.peak_rss_mib:.1f}",
            str(row.lines),
        ]
        for row in rows
    ]
    if all(row.peak_rss_mib is None for row in rows):
        column = HEADERS.index("peak RSS MiB")
        cells = [line[:column] + line[column + 1 :] for line in cells]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = []
    for line in cells:
        text = [
            cell.ljust(width) if i in (0, 2) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(text).rstrip())
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """The command line: site options, the crawl options the oracle needs, the output."""
    say = functools.partial(BOOK.say, lang=lang)
    parser = argparse.ArgumentParser(
        prog="python -m shared.tools.bench.compare",
        epilog=say("Other options (--timeout, --max-pages, ...) are passed to every crawler."),
        **help_in(
            lang,
            description=say(
                "Crawl one test site with every stage and the threaded baseline; print a "
                "table; draw each crawl's fetches over time (queued, connecting, reading) "
                "and the benchmark's memory per fetch and race of slow fetches."
            ),
        ),
    )
    add_help_option(parser, lang)
    parser.add_argument("--lang", choices=LANGUAGES, help=say("the language it speaks"))
    site = parser.add_argument_group(say("the test site"))
    site.add_argument("--pages", type=int, default=300, help=say("normal pages (300)"))
    site.add_argument("--latency", type=float, default=0.02, help=say("seconds per answer (0.02)"))
    site.add_argument("--fanout", type=int, default=5, help=say("links per page (5)"))
    site.add_argument("--seed", type=int, default=1, help=say("the site's random seed (1)"))
    site.add_argument("--no-traps", action="store_true", help=say("plain pages only"))
    site.add_argument("--wide", type=int, default=0, help=say("slow /wide/ pages (0)"))
    site.add_argument("--wide-delay", type=float, default=0.0, help=say("their delay (0)"))
    crawl = parser.add_argument_group(say("every crawler"))
    crawl.add_argument("--max-tasks", type=int, default=10, help=say("fetches in flight (10)"))
    crawl.add_argument("--max-redirect", type=int, default=10, help=say("redirects per path (10)"))
    crawl.add_argument("--max-tries", type=int, default=4, help=say("tries per URL (4)"))
    crawl.add_argument("--exclude", metavar="REGEX", help=say("skip URLs matching this"))
    out = parser.add_argument_group(say("output"))
    where = out.add_mutually_exclusive_group()
    where.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help=say("the folder for the pictures, {} (out/)").format(", ".join(PICTURES)),
    )
    where.add_argument(
        "--readme",
        action="store_true",
        help=say("redraw the README's pictures, in shared/tools/bench/ (run with no other option)"),
    )
    out.add_argument(
        "--results",
        type=Path,
        metavar="PATH",
        help=say(
            "the benchmark's figures for memory.svg, race.svg, latency.svg and KiB/fetch "
            "(shared/tools/bench/results.json, the committed ones)"
        ),
    )
    out.add_argument("--json", type=Path, help=say("also write the table's rows as JSON here"))
    out.add_argument(
        "--no-pin",
        action="store_true",
        help=say("do not pin the site and the crawler to two cores"),
    )
    return parser


def compare(
    site_options: SiteOptions,
    crawl_args: Sequence[str],
    oracle_options: dict[str, object],
    *,
    pin: bool = True,
    crawlers: Sequence[Crawler] = CRAWLERS,
    kib: dict[str, float] | None = None,
) -> tuple[list[Row], list[Run], str]:
    """Crawl one site with each crawler in turn; return the rows, the runs and the site's URL.

    ``kib`` is each crawler's memory per fetch in flight, from the benchmark's results,
    for the table.
    """
    site_core, crawler_core = core_pair(pin)
    runs: list[Run] = []
    with site_server(site_options, site_core) as server:
        expected = set(site_options.site().expected(server.url, **oracle_options))
        for crawler in crawlers:
            server.reset()  # the flaky page fails twice again, for every crawler alike
            runs.append(run_crawler(crawler, server.url, crawl_args, core=crawler_core))
        return [row_for(run, expected, kib) for run in runs], runs, server.url


#: What to read from the phase picture, and what its marks are.
CAPTION = (
    "Read: above each line, fetches in flight, reading (blue) once connected, connecting "
    "(orange) before; below it, URLs queued, found but not begun. URLs queued while fewer "
    "than --max-tasks are in flight mean something else holds the crawler back (its own "
    "work, --delay, --max-per-host, robots.txt). First step: the root page alone, nothing "
    "queued yet; then the pages it links to. Orange spikes: fetches begun together whose "
    "connects wait to be noticed while the crawler is busy with the responses before them. "
    "Thin tail: a chain of redirects, one hop at a time."
)


def picture(runs: Sequence[Run], rows: Sequence[Row], title: str, subtitle: str, limit: int) -> str:
    """Draw the runs' fetches over time, queued, connecting and reading, one lane each."""
    lanes = []
    undivided = []
    for run, row in zip(runs, rows, strict=True):
        phases = run_phases(run)
        divided = has_connect_times(phases) or not run.timeline
        if not divided:
            undivided.append(row.crawler)
        facts = f"{row.pages} pages in {row.seconds:.2f} s\npeak {row.peak_in_flight} in flight"
        facts += f"\npeak {row.peak_queued} queued"
        steps = phase_steps(run.timeline, phases)
        lanes.append(Lane(row.crawler, steps, run.elapsed_s, facts, divided))
    caption = CAPTION
    if undivided:  # a crawler that said nothing of its connections is not guessed at
        caption += (
            f" No connect times were recorded by {', '.join(undivided)}: fetches in flight "
            "drawn undivided (green)."
        )
    return render(lanes, title=title, subtitle=subtitle, caption=caption, limit=limit)


def load_results(path: Path | None) -> tuple[dict[str, Any] | None, Path]:
    """The benchmark's results document, and its path; None if the committed one is missing.

    A results file named on the command line must be there: that is an error.
    """
    chosen = path or COMMITTED_JSON
    try:
        return json.loads(chosen.read_text(encoding="utf-8")), chosen
    except (OSError, ValueError) as exc:
        if path is not None:
            raise SystemExit(f"--results {path}: {exc}") from exc
        print(f"No benchmark results ({exc}): no memory.svg, race.svg, latency.svg nor KiB/fetch.")
        return None, chosen


def shown(path: Path) -> str:
    """A path as the pictures name it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def output_dir(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """The folder the pictures go to: out/, --out DIR, or with --readme the README's."""
    chosen: Path = README_OUT if args.readme else (args.out or DEFAULT_OUT)
    if chosen.suffix == ".svg":  # --out once named the one picture there was
        parser.error(
            f"--out names a folder, for {', '.join(PICTURES)}, not {chosen}; "
            "--readme redraws the README's"
        )
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison from the command line; exit status 1 if a crawler failed."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = chosen_language(argv)  # read first, so that --help speaks it too
    say = functools.partial(BOOK.say, lang=lang)
    parser = build_parser(lang)
    args, passed_on = parser.parse_known_args(argv)
    out_dir = output_dir(parser, args)
    if not memory_measurable():
        print(
            "Peak memory is left out: it is measured with fork() and the resource module, "
            "which this system (Windows) does not have; run on Linux or macOS for it."
        )
    results, results_path = load_results(args.results)
    if results is not None and not s3_sizes(results):
        print(
            f"{shown(results_path)} has no S3 figures: "
            "no memory.svg, race.svg, latency.svg nor KiB/fetch."
        )
        results = None
    kib = kib_per_fetch(results) if results else {}
    site_options = SiteOptions(
        pages=args.pages,
        seed=args.seed,
        fanout=args.fanout,
        latency=args.latency,
        traps=not args.no_traps,
        wide=args.wide,
        wide_delay=args.wide_delay,
    )
    crawl_args = [
        f"--max-tasks={args.max_tasks}",
        f"--max-redirect={args.max_redirect}",
        f"--max-tries={args.max_tries}",
        *([f"--exclude={args.exclude}"] if args.exclude else []),
        *ignore_robots_flag(),
        *passed_on,
    ]
    oracle = {"max_redirect": args.max_redirect, "max_tries": args.max_tries}
    oracle["exclude"] = args.exclude
    if ignore_robots_flag():
        oracle["ignore_robots"] = True  # the crawlers were told to, so no robots.txt record
    rows, runs, url = compare(site_options, crawl_args, oracle, pin=not args.no_pin, kib=kib)

    site = f"{args.pages} pages" + ("" if args.no_traps else " and the traps")
    site += f", {args.latency * 1000:g} ms per response"
    if args.wide:
        site += f", {args.wide} wide pages of {args.wide_delay:g} s"
    print(say("Site: {}, at {}").format(site, url))
    print(say("Crawlers: {}").format(" ".join(crawl_args)))
    print()
    print(format_table(rows))
    print(
        "\n"
        + say("peak queued: URLs found and not begun; peak in flight: fetches begun and not ended.")
    )
    if results:
        size = int(s3_sizes(results)[0])
        print(
            f"KiB/fetch: memory per fetch in flight with {size:,} at once, from "
            f"{shown(results_path)} (nox -s bench), not from this crawl."
        )
    for run in runs:
        if not run.ok:
            failure = f"\n{run.crawler.name} exited with {run.returncode}:\n{run.stderr}"
            print(failure, file=sys.stderr)

    title = "Fetches over time: queued, connecting, reading"
    subtitle = f"{site}; --max-tasks {args.max_tasks}"
    drawn = {PICTURES[0]: picture(runs, rows, title, subtitle, args.max_tasks)}
    if results:
        drawn[PICTURES[1]] = memory_svg(results, shown(results_path))
        drawn[PICTURES[2]] = race_svg(results, shown(results_path))
        if "S2" in results:
            drawn[PICTURES[3]] = latency_svg(results, shown(results_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    print()
    for name, text in drawn.items():
        (out_dir / name).write_text(text, encoding="utf-8")
        print(f"Picture: {out_dir / name}")
    if args.json:
        doc = {"site": asdict(site_options), "args": crawl_args, "rows": [asdict(r) for r in rows]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0 if all(run.ok for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
