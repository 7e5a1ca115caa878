"""What one page costs in the code every stage shares: CPU per page, without the network.

``python -m shared.tools.bench.pagecost`` serves a test site, fetches each of its pages once,
then stops the site and hands every response to ``BaseCrawler.record_response``, as a
stage does after each fetch, over and over.  What that costs per page is the floor of
a crawler's CPU per page, whatever its concurrency style: the benchmark's S1 and S2
figures (``nox -s bench``) cannot fall below it.

It prints, in microseconds of CPU per page (the best of --repeat passes):

* the whole of ``record_response``, and its parts measured one by one on the same pages:
  decoding the body, extracting the raw links (:func:`shared.links.raw_links`), joining
  and normalising them (the rest of :func:`shared.links.parse_links`), the scope check
  (:meth:`shared.urls.UrlRules.allowed` on each link) and, as the remainder, the
  record's own bookkeeping;
* link finding (:func:`shared.links.parse_links`) on one page of 1 KiB to 1 MiB, an
  ordinary page and one of CDATA openers that never close, in µs per KiB: a figure that
  stays flat as the page grows is a cost in proportion to it (a measurement, not a test:
  tests/test_shared.py bounds the growth);
* with ``--profile N``, cProfile's N most expensive functions in one pass, by their own
  time.  The profiler adds a cost to every call, so it inflates code made of many small
  calls: read it for where the time goes, and the table above it for how much.

The default site is the benchmark's (2,000 pages, 10 links each, no traps); ``--traps``
adds the trap pages (a 1 MB page among them) for the corner cases' share.
"""

from __future__ import annotations

import argparse
import cProfile
import http.client
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

from shared.crawling import BaseCrawler, Options
from shared.links import parse_links, raw_links
from shared.responses import Response, content_type, decode_body, is_parsed
from shared.robots import MAX_ROBOTS, Rules
from shared.testsite import Site, serve
from shared.urls import UrlRules

#: The parts of the per-page path, in the order the crawler runs them, with their labels.
PARTS = {
    "decode": "decode the body (content_type, decode_body)",
    "extract": "extract the raw links (raw_links: the HTML parser)",
    "resolve": "join and normalise them (parse_links less raw_links)",
    "scope": "scope check of each link (UrlRules.allowed)",
    "record": "the record's bookkeeping (the rest of record_response, by difference)",
    "whole": "record_response, the whole per-page path",
}


class Page(NamedTuple):
    """One fetched URL: what a stage hands to record_response."""

    url: str
    response: Response


@dataclass(frozen=True)
class Corpus:
    """A site's pages as fetched, and the root a crawl of them starts from."""

    root: str
    pages: list[Page]

    @property
    def parsed(self) -> list[tuple[str, str]]:
        """(url, text) of the pages the crawler reads for links: 200s of a parsed type."""
        out = []
        for page in self.pages:
            media_type, charset = content_type(page.response)
            if page.response.status == 200 and is_parsed(media_type):
                out.append((page.url, decode_body(page.response.body, charset)[0]))
        return out


def get(conn: http.client.HTTPConnection, url: str, tries: int = 4) -> Response:
    """GET one URL on a kept-alive connection, trying again when the site drops it."""
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    for attempt in range(1, tries + 1):
        try:
            conn.request("GET", target)
            answer = conn.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException):
            conn.close()  # http.client reconnects on the next request
            if attempt == tries:
                raise
            continue
        headers = {name.lower(): value for name, value in answer.getheaders()}
        return Response(answer.status, headers, body)
    raise AssertionError("unreachable")


def fetch_site(site: Site) -> Corpus:
    """Serve the site, fetch every URL its oracle says a crawl records, and stop it."""
    with serve(site) as root:
        expected = site.expected(root, ignore_robots=True)
        parts = urlsplit(root)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            pages = [
                Page(url, get(conn, url))
                for url, record in expected.items()
                if record.status is not None  # every try fails: nothing to parse
            ]
        finally:
            conn.close()
    return Corpus(root, pages)


def best_cpu(
    run: Callable[[], object], repeat: int, setup: Callable[[], None] = lambda: None
) -> float:
    """The least CPU time, in seconds, that one call of ``run`` took over ``repeat`` calls.

    CPU time of this process rather than wall time: on a shared machine another
    program's turn on the core is not charged to the code under test.
    """
    times = []
    for _ in range(repeat):
        setup()
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


class RecordPass:
    """One pass of record_response over every page, by a fresh crawler made in setup()."""

    def __init__(self, corpus: Corpus) -> None:
        """Prepare passes over the corpus; the crawler is made by :meth:`setup`."""
        self.corpus = corpus
        self.crawler: BaseCrawler | None = None

    def setup(self) -> None:
        """A new crawler, outside the measured time: each pass finds every link new."""
        self.crawler = BaseCrawler([self.corpus.root], Options(ignore_robots=True))

    def __call__(self) -> None:
        """Record every page, as a stage does after each fetch."""
        assert self.crawler is not None, "setup() first"
        record = self.crawler.record_response
        for page in self.corpus.pages:
            record(page.url, 10, page.response, 1)


def measure(corpus: Corpus, repeat: int = 5) -> dict[str, float]:
    """Microseconds of CPU per page for each part of the per-page path (see PARTS)."""
    pages = corpus.pages
    parsed = corpus.parsed
    rules = UrlRules([corpus.root])
    found = [parse_links(url, text) for url, text in parsed]

    def decode() -> None:
        for page in pages:
            media_type, charset = content_type(page.response)
            if page.response.status == 200 and is_parsed(media_type):
                decode_body(page.response.body, charset)

    def extract() -> None:
        for _, text in parsed:
            raw_links(text)

    def links() -> None:
        for url, text in parsed:
            parse_links(url, text)

    def scope() -> None:
        allowed = rules.allowed
        for links in found:
            for link in links:
                allowed(link)

    whole = RecordPass(corpus)
    seconds = {
        "decode": best_cpu(decode, repeat),
        "extract": best_cpu(extract, repeat),
        "links": best_cpu(links, repeat),
        "scope": best_cpu(scope, repeat),
        "whole": best_cpu(whole, repeat, whole.setup),
    }
    per_page = {name: value / len(pages) * 1e6 for name, value in seconds.items()}
    return {
        "decode": per_page["decode"],
        "extract": per_page["extract"],
        "resolve": max(per_page["links"] - per_page["extract"], 0.0),
        "scope": per_page["scope"],
        "record": max(
            per_page["whole"] - per_page["decode"] - per_page["links"] - per_page["scope"], 0.0
        ),
        "whole": per_page["whole"],
    }


#: The page sizes link finding is measured at, in KiB: 1 KiB to 1 MiB.
SIZES_KIB = (1, 4, 16, 64, 256, 1024)
#: The pages it is measured on: what each is made of, repeated to the size.
PAGE_KINDS = {
    "ordinary": '<p>Some words of text, and <a href="/p/{n}">a link</a> to another page.</p>\n',
    "CDATA never closed": "<![CDATA[ <a href=/never> ",
}


def page_of(kind: str, size: int) -> str:
    """A page of ``size`` characters made of the kind's piece (numbered, for the links)."""
    piece = PAGE_KINDS[kind]
    count = size // len(piece.replace("{n}", "")) + 1  # numbers make pieces longer, not shorter
    return "".join(piece.replace("{n}", str(n % 100)) for n in range(count))[:size]


def by_size(repeat: int = 5, sizes_kib: Sequence[int] = SIZES_KIB) -> dict[str, list[float]]:
    """µs of CPU per KiB that link finding takes on each kind of page, at each size."""
    found: dict[str, list[float]] = {}
    for kind in PAGE_KINDS:
        found[kind] = []
        for kib in sizes_kib:
            text = page_of(kind, kib * 1024)
            seconds = best_cpu(partial(parse_links, "http://h/", text), repeat)
            found[kind].append(seconds * 1e6 / kib)
    return found


def size_table(costs: dict[str, list[float]], sizes_kib: Sequence[int] = SIZES_KIB) -> str:
    """Link finding by page size as a markdown table."""
    lines = [
        "| link finding, µs of CPU per KiB | "
        + " | ".join(f"{kib} KiB" for kib in sizes_kib)
        + " |",
        "|---|" + "---:|" * len(sizes_kib),
    ]
    lines += [
        f"| {kind} | " + " | ".join(f"{value:.1f}" for value in values) + " |"
        for kind, values in costs.items()
    ]
    return "\n".join(lines)


def big_robots_txt(size: int) -> str:
    """A robots.txt of about ``size`` bytes, shaped like a large site's: a few rules for
    the whole site, then rules for many directories, plain, wildcard and anchored."""
    lines = ["User-agent: *", "Allow: /", "Disallow: /*.pdf$", "Disallow: /*?sessionid="]
    length = sum(len(line) + 1 for line in lines)  # kept as lines are added: one pass
    n = 0
    while length < size:
        group = [f"Disallow: /d{n}/", f"Allow: /d{n}/open", f"Disallow: /d{n}/*/print$"]
        lines += group
        length += sum(len(line) + 1 for line in group)
        n += 1
    return "\n".join(lines) + "\n"


#: The robots.txt sizes a check is measured at: 1 KiB and the cap, 500 KiB.
ROBOTS_SIZES = (1024, MAX_ROBOTS)
#: The URLs checked: in directories the file names, and elsewhere.
ROBOTS_PATHS = [f"/d{n}/page/{n}" for n in range(0, 40, 3)] + ["/p/1", "/a.pdf", "/x?sessionid=1"]


def robots_cost(repeat: int = 5) -> dict[int, float]:
    """µs of CPU per URL that a robots.txt check takes, for each file size (the index is
    built before: once per origin, it is no part of a check)."""
    found: dict[int, float] = {}
    urls = ["http://h" + path for path in ROBOTS_PATHS]
    for size in ROBOTS_SIZES:
        rules = Rules(big_robots_txt(size))
        seconds = best_cpu(partial(check_all, rules, urls), repeat)
        found[size] = seconds * 1e6 / len(urls)
    return found


def check_all(rules: Rules, urls: list[str]) -> None:
    """Check every URL against the rules, as a crawl checks each link it finds."""
    for url in urls:
        rules.allows(url)


def robots_table(costs: dict[int, float]) -> str:
    """The robots.txt check's cost by file size, as a markdown table."""
    head = " | ".join(f"{size // 1024} KiB" for size in costs)
    values = " | ".join(f"{us:.1f}" for us in costs.values())
    return (
        f"| robots.txt check, µs of CPU per URL | {head} |\n|---|"
        + "---:|" * len(costs)
        + f"\n| {len(ROBOTS_PATHS)} URLs | {values} |"
    )


@dataclass(frozen=True)
class ProfileRow:
    """One function in cProfile's account of a pass, per page."""

    function: str
    calls: float
    own_us: float
    cumulative_us: float


def _label(func: tuple[str, int, str]) -> str:
    """A short name for a profiled function: "module.function", or the built-in's own."""
    filename, _, name = func
    if filename == "~":  # a built-in: cProfile names it "<method 'match' of ...>"
        return name
    return f"{Path(filename).stem}.{name}"


def profile(corpus: Corpus, top: int) -> list[ProfileRow]:
    """cProfile one pass of record_response over the corpus: the ``top`` by own time."""
    run = RecordPass(corpus)
    run.setup()
    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    n = len(corpus.pages)
    rows = [
        ProfileRow(_label(func), calls / n, own / n * 1e6, cumulative / n * 1e6)
        for func, (_, calls, own, cumulative, _) in stats.items()
    ]
    rows.sort(key=lambda row: row.own_us, reverse=True)
    return rows[:top]


def describe(site: Site, corpus: Corpus) -> str:
    """One line naming the site, the pages and the interpreter."""
    links = [len(parse_links(url, text)) for url, text in corpus.parsed]
    size = statistics.mean(len(page.response.body) for page in corpus.pages)
    traps = "with the traps" if site.traps else "no traps"
    return (
        f"{site.pages:,}-page site (fanout {site.fanout}, {traps}): {len(corpus.pages):,} "
        f"responses, {len(links):,} parsed, {size / 1024:.1f} KiB and "
        f"{statistics.mean(links or [0]):.1f} distinct links each on average; "
        f"{sys.implementation.name} {sys.version.split()[0]}"
    )


def table(parts: dict[str, float], repeat: int) -> str:
    """The parts as a markdown table."""
    lines = [f"| part (best of {repeat}) | µs per page |", "|---|---:|"]
    lines += [f"| {PARTS[name]} | {parts[name]:.1f} |" for name in PARTS]
    return "\n".join(lines)


def profile_table(rows: Iterable[ProfileRow]) -> str:
    """cProfile's rows as a markdown table."""
    lines = [
        "| function (cProfile, one pass) | calls per page | own µs per page | cumulative µs |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| `{row.function}` | {row.calls:.1f} | {row.own_us:.1f} | {row.cumulative_us:.1f} |"
        for row in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch a site once, then print the CPU per page of the shared per-page path."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.tools.bench.pagecost", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--pages", type=int, default=2000, help="normal pages (2,000)")
    parser.add_argument("--fanout", type=int, default=10, help="links per page (10)")
    parser.add_argument("--traps", action="store_true", help="add the trap pages")
    parser.add_argument("--repeat", type=int, default=5, help="passes; the best counts (5)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="top N of cProfile")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    site = Site(args.pages, fanout=args.fanout, traps=args.traps)
    corpus = fetch_site(site)
    print(describe(site, corpus), end="\n\n")
    print(table(measure(corpus, args.repeat), args.repeat))
    print()
    print(size_table(by_size(args.repeat)))
    print()
    print(robots_table(robots_cost(args.repeat)))
    if args.profile:
        print()
        print(profile_table(profile(corpus, args.profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
