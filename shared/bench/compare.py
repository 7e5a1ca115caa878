"""Side by side: the three stages and the threaded baseline crawl one site, one table, one picture.

``python -m shared.bench.compare [options]`` (``nox -s compare -- [options]``) serves one
test site in a process of its own, crawls it with each crawler in turn, each in its own
process with the same options, and prints for each: the pages it found, whether they are
the oracle's page set, its time and pages per second, the most fetches it had in flight
at once (from its timeline), its peak memory and the lines of code it took.  Then it
draws the fetches in flight over time, one lane per crawler, to an SVG file: out/compare.svg,
which git ignores, or --out PATH (``--out shared/bench/compare.svg`` redraws the README's).

Site options (--pages, --latency, ...) shape the site; crawler options (--max-tasks,
--max-tries, --timeout, ...) are passed to every crawler alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from shared.bench.measure import (
    CRAWLERS,
    ROOT,
    Crawler,
    Run,
    SiteOptions,
    core_pair,
    count_lines,
    ignore_robots_flag,
    in_flight_steps,
    page_set_difference,
    peak_in_flight,
    posix_only,
    run_crawler,
    site_server,
)
from shared.bench.svg import Lane, render

#: Where the picture goes by default: a folder git ignores, so a run leaves the tree clean.
#: The README's picture, shared/bench/compare.svg, is redrawn only when --out names it.
DEFAULT_SVG = ROOT / "out" / "compare.svg"


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    crawler: str
    pages: int
    same_pages: str  # "yes", or "+N -M" against the oracle, or why the crawl failed
    seconds: float
    pages_per_s: float
    peak_in_flight: int
    peak_rss_mib: float
    lines: int


def row_for(run: Run, expected: set[str]) -> Row:
    """Sum up one crawler's run against the oracle's page set."""
    same = page_set_difference(run.urls, expected) if run.ok else f"failed ({run.returncode})"
    return Row(
        crawler=run.crawler.name,
        pages=run.records,
        same_pages=same,
        seconds=round(run.elapsed_s, 3),
        pages_per_s=round(run.records / run.elapsed_s, 1) if run.elapsed_s > 0 else 0.0,
        peak_in_flight=peak_in_flight(run.timeline) if run.timeline else 0,
        peak_rss_mib=round(run.peak_rss_kib / 1024, 1),
        lines=count_lines(run.crawler.files),
    )


HEADERS = (
    "crawler",
    "pages",
    "same pages",
    "time s",
    "pages/s",
    "peak in flight",
    "peak RSS MiB",
    "lines",
)


def format_table(rows: Sequence[Row]) -> str:
    """Return the rows as an aligned plain-text table: names left, numbers right."""
    cells = [list(HEADERS)] + [
        [
            row.crawler,
            str(row.pages),
            row.same_pages,
            f"{row.seconds:.2f}",
            f"{row.pages_per_s:.0f}",
            str(row.peak_in_flight),
            f"{row.peak_rss_mib:.1f}",
            str(row.lines),
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADERS))]
    lines = []
    for line in cells:
        text = [
            cell.ljust(width) if i in (0, 2) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  ".join(text).rstrip())
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command line: site options, the crawl options the oracle needs, the output."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.bench.compare",
        description="Crawl one test site with every stage and the threaded baseline; "
        "print a table and draw fetches in flight over time.",
        epilog="Other options (--timeout, --max-pages, ...) are passed to every crawler.",
    )
    site = parser.add_argument_group("the test site")
    site.add_argument("--pages", type=int, default=300, help="normal pages (300)")
    site.add_argument("--latency", type=float, default=0.02, help="seconds per answer (0.02)")
    site.add_argument("--fanout", type=int, default=5, help="links per page (5)")
    site.add_argument("--seed", type=int, default=1, help="the site's random seed (1)")
    site.add_argument("--no-traps", action="store_true", help="plain pages only")
    site.add_argument("--wide", type=int, default=0, help="slow /wide/ pages (0)")
    site.add_argument("--wide-delay", type=float, default=0.0, help="their delay (0)")
    crawl = parser.add_argument_group("every crawler")
    crawl.add_argument("--max-tasks", type=int, default=10, help="fetches in flight (10)")
    crawl.add_argument("--max-redirect", type=int, default=10, help="redirects per path (10)")
    crawl.add_argument("--max-tries", type=int, default=4, help="tries per URL (4)")
    crawl.add_argument("--exclude", metavar="REGEX", help="skip URLs matching this")
    out = parser.add_argument_group("output")
    out.add_argument(
        "--out",
        "--svg",
        dest="svg",
        type=Path,
        default=DEFAULT_SVG,
        metavar="PATH",
        help="the picture (out/compare.svg; the README's is shared/bench/compare.svg)",
    )
    out.add_argument("--json", type=Path, help="also write the table's rows as JSON here")
    out.add_argument(
        "--no-pin", action="store_true", help="do not pin the site and the crawler to two cores"
    )
    return parser


def compare(
    site_options: SiteOptions,
    crawl_args: Sequence[str],
    oracle_options: dict[str, object],
    *,
    pin: bool = True,
    crawlers: Sequence[Crawler] = CRAWLERS,
) -> tuple[list[Row], list[Run], str]:
    """Crawl one site with each crawler in turn; return the rows, the runs and the site's URL."""
    site_core, crawler_core = core_pair(pin)
    runs: list[Run] = []
    with site_server(site_options, site_core) as server:
        expected = set(site_options.site().expected(server.url, **oracle_options))
        for crawler in crawlers:
            server.reset()  # the flaky page fails twice again, for every crawler alike
            runs.append(run_crawler(crawler, server.url, crawl_args, core=crawler_core))
        return [row_for(run, expected) for run in runs], runs, server.url


def picture(runs: Sequence[Run], rows: Sequence[Row], title: str, subtitle: str, limit: int) -> str:
    """Draw the runs' fetches in flight over time, one lane each."""
    lanes = [
        Lane(
            name=row.crawler,
            steps=in_flight_steps(run.timeline),
            end=run.elapsed_s,
            facts=f"{row.pages} pages in {row.seconds:.2f} s\npeak {row.peak_in_flight} in flight",
        )
        for run, row in zip(runs, rows, strict=True)
    ]
    return render(lanes, title=title, subtitle=subtitle, limit=limit)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison from the command line; exit status 1 if a crawler failed."""
    args, passed_on = build_parser().parse_known_args(argv)
    posix_only("python -m shared.bench.compare")
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
    rows, runs, url = compare(site_options, crawl_args, oracle, pin=not args.no_pin)

    site = f"{args.pages} pages" + ("" if args.no_traps else " and the traps")
    site += f", {args.latency * 1000:g} ms per response"
    if args.wide:
        site += f", {args.wide} wide pages of {args.wide_delay:g} s"
    print(f"Site: {site}, at {url}")
    print(f"Crawlers: {' '.join(crawl_args)}")
    print()
    print(format_table(rows))
    for run in runs:
        if not run.ok:
            failure = f"\n{run.crawler.name} exited with {run.returncode}:\n{run.stderr}"
            print(failure, file=sys.stderr)

    title = "Fetches in flight over time"
    subtitle = f"{site}; --max-tasks {args.max_tasks}"
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(picture(runs, rows, title, subtitle, args.max_tasks), encoding="utf-8")
    print(f"\nPicture: {args.svg}")
    if args.json:
        doc = {"site": asdict(site_options), "args": crawl_args, "rows": [asdict(r) for r in rows]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0 if all(run.ok for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
