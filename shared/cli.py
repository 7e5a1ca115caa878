"""The one command line of every stage, so the three crawlers cannot drift apart.

``python -m STAGE [ROOT ...] [options]``; with no ROOT the stage crawls the built-in
test site.  Exit status: 0 when the crawl finished (HTTP errors are data, not
failures), 2 on a usage error, 130 after Ctrl-C, with the partial report and JSON,
and 141 when our output's reader went away (``| head``), the JSON file still written.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence

from shared import STAGES, interrupt, log, reader_left, tasktree
from shared.crawling import Options, root_url
from shared.observe import Observer, watching
from shared.report import CrawlResult, report, write_json
from shared.timeline import Timeline
from shared.tls import ssl_context
from shared.trace import Tracer
from shared.trace_events import TraceEvents

Crawl = Callable[[Sequence[str], Options], CrawlResult]

# 130 follows the shell's 128 + signal number for SIGINT (Ctrl-C); SIGPIPE's 141 is
# shared.EXIT_PIPE, what every command line of the project exits with when its reader left.
EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130


def build_parser(prog: str) -> argparse.ArgumentParser:
    """Return the argument parser every stage uses."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Crawl a web site and report every URL it finds.",
        epilog="With no ROOT, the built-in test site is started and crawled.",
    )
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    parser.add_argument(
        "--max-tasks", type=int, default=10, metavar="N", help="fetches in flight (10)"
    )
    parser.add_argument(
        "--max-per-host",
        type=int,
        metavar="N",
        help="fetches in flight to one host at once, robots.txt's included (no limit)",
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds between the starts of two requests to one host, to crawl gently (0)",
    )
    parser.add_argument(
        "--max-redirect", type=int, default=10, metavar="N", help="redirects per path (10)"
    )
    parser.add_argument("--max-tries", type=int, default=4, metavar="N", help="tries per URL (4)")
    parser.add_argument("--exclude", metavar="REGEX", help="skip URLs matching this")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--strict",
        dest="strict",
        action="store_true",
        default=True,
        help="only the roots' hosts and their www. twins (default)",
    )
    scope.add_argument(
        "--lenient",
        dest="strict",
        action="store_false",
        help="any host with the same last two labels",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="seconds per request (10)"
    )
    parser.add_argument(
        "--max-pages", type=int, metavar="N", help="fetch at most N pages (robots.txt aside)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the result as JSON ('-': stdout)")
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="add each fetch's start and end time, and when it was queued and connected, "
        "to the JSON",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="print a line per step of the event loop, to watch fetches interleave",
    )
    parser.add_argument(
        "--trace-events",
        metavar="PATH",
        help="write the loop's steps, waits and wake-ups as a Chrome Trace Event file, "
        "for Perfetto or Chromium's trace viewer (also after Ctrl-C)",
    )
    parser.add_argument(
        "--site-pages",
        type=int,
        metavar="N",
        help="with no ROOT: a plain built-in site of N pages, without the traps",
    )
    parser.add_argument(
        "--site-latency",
        type=float,
        default=0.0,
        metavar="S",
        help="with no ROOT: the built-in site answers after S seconds, to see fetches wait",
    )
    parser.add_argument(
        "--fail-on",
        metavar="SUBSTRING",
        help="make link parsing raise for URLs containing this (the stack-ripping demo)",
    )
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument(
        "--insecure",
        action="store_true",
        help="do not verify TLS certificates (a warning is logged)",
    )
    trust.add_argument(
        "--cafile", metavar="PATH", help="also trust the CA certificates in this PEM file"
    )
    parser.add_argument(
        "--ignore-robots", action="store_true", help="neither fetch nor obey robots.txt"
    )
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="count", default=0, help="more log (-vv: debug)")
    loud.add_argument("-q", "--quiet", action="store_true", help="no progress, errors only")
    return parser


def parse_args(prog: str, argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, Options]:
    """Parse a command line into its namespace and the crawl's Options.

    A bad value ends the program with a usage message and exit status 2.
    """
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        for root in args.roots:
            root_url(root)
        options = Options(
            max_tasks=args.max_tasks,
            max_per_host=args.max_per_host,
            delay=args.delay,
            max_redirect=args.max_redirect,
            max_tries=args.max_tries,
            exclude=args.exclude,
            strict=args.strict,
            timeout=args.timeout,
            max_pages=args.max_pages,
            fail_on=args.fail_on,
            progress=not args.quiet and sys.stderr.isatty(),
            insecure=args.insecure,
            cafile=args.cafile,
            ignore_robots=args.ignore_robots,
        )
        if args.exclude:
            re.compile(args.exclude)
        if args.site_pages is not None and args.site_pages < 1:
            raise ValueError(f"--site-pages must be >= 1 (got {args.site_pages})")
        if args.site_latency < 0:
            raise ValueError(f"--site-latency must be >= 0 seconds (got {args.site_latency})")
        if args.cafile:
            ssl_context(cafile=args.cafile)  # a usage error now, not a failed crawl later
    except re.error as exc:
        parser.error(f"--exclude is not a valid regular expression: {exc}")
    except ValueError as exc:
        parser.error(str(exc))
    except OSError as exc:  # ssl.SSLError is one too: a file that holds no certificate
        parser.error(f"--cafile {args.cafile}: cannot load it: {exc}")
    return args, options


def configure_logging(verbose: int, quiet: bool, *, libraries: bool = False) -> None:
    """Map -v/-q to log levels: warnings by default, -v info, -vv debug, -q errors only.

    The crawler's own messages go through shared/log.py.  The standard library's
    ``logging`` is set up too only with ``libraries``, when something in the process logs
    with it: stage 3's asyncio and aiohttp, or the built-in test site's server, which logs
    a line per request it answers (``aiohttp.access``: only -vv shows those).  A crawl of
    stage 1 or 2 never imports ``logging``, nor the ``threading`` it brings.
    """
    level = log.ERROR if quiet else [log.WARNING, log.INFO, log.DEBUG][min(verbose, 2)]
    log.set_level(level)
    if libraries:
        import logging  # here, not at the top: see shared/log.py

        logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
        access_log = logging.getLogger("aiohttp.access")
        access_log.setLevel(logging.NOTSET if verbose >= 2 else logging.WARNING)  # as root


@contextlib.contextmanager
def roots_or_test_site(
    roots: list[str], pages: int | None = None, latency: float = 0.0
) -> Iterator[list[str]]:
    """Yield the roots to crawl; with none, serve the built-in test site and yield its URL.

    The built-in site is the default test site, traps and all, or with ``pages`` a
    plain site of that many pages (``--site-pages 6`` makes a site small enough to trace).
    ``latency`` delays every answer (``--site-latency 0.2``: time to press Ctrl-C mid-crawl).
    """
    if roots:
        yield roots
        return
    from shared.testsite import Site, serve  # only a crawl of the built-in site needs aiohttp.web

    site = Site(latency=latency) if pages is None else Site(pages, traps=False, latency=latency)
    with serve(site) as base_url:
        print(f"crawling the built-in test site at {base_url}", file=sys.stderr)
        yield [base_url]


def write_trace_events(trace: TraceEvents, path: str, quiet: bool) -> None:
    """Write the --trace-events file; a file that cannot be written costs the crawl nothing."""
    try:
        size = trace.write(path)
    except OSError as exc:
        print(f"--trace-events {path}: cannot write it: {exc}", file=sys.stderr)
        return
    if not quiet:
        print(f"wrote {path} ({size / 1e6:.1f} MB)", file=sys.stderr)


def main(stage: str, crawl: Crawl, argv: Sequence[str] | None = None) -> int:
    """Run a stage's ``crawl`` from the command line; return the exit status."""
    args, options = parse_args(f"python -m {stage}", argv)
    # No ROOT: the built-in test site is served from this process, and logs with `logging`.
    libraries = not args.roots or stage == STAGES["stage3"]
    configure_logging(args.verbose, args.quiet, libraries=libraries)
    # --trace and --timeline watch the crawl (shared/observe.py); without them nobody does.
    timeline = Timeline() if args.timeline else None
    observers: list[Observer] = [Tracer()] if args.trace else []
    observers += [timeline] if timeline else []
    trace_events = TraceEvents() if args.trace_events else None
    observers += [trace_events] if trace_events else []
    # SIGUSR1, and with -v a first Ctrl-C, print where every task waits (shared/tasktree.py).
    hooks = [tasktree.dump] if args.verbose else []
    interrupt.at_first_press.extend(hooks)
    try:
        site = roots_or_test_site(args.roots, args.site_pages, args.site_latency)
        try:
            with site as roots, watching(*observers), tasktree.on_sigusr1():
                result = crawl(roots, options)
        finally:  # after Ctrl-C too, with the steps recorded until then
            for hook in hooks:
                interrupt.at_first_press.remove(hook)
            if trace_events and args.trace_events:
                write_trace_events(trace_events, args.trace_events, args.quiet)
        extra = timeline.to_json() if timeline else None
        if args.json and args.json != "-":  # first: the file must not depend on a pipe
            with open(args.json, "w", encoding="utf-8") as out:
                write_json(result, out, extra)
        # With --json -, stdout carries the JSON alone, so the report moves to stderr.
        report(result, sys.stderr if args.json == "-" else sys.stdout)
        if args.json == "-":
            write_json(result, sys.stdout, extra)
        sys.stdout.flush()
    except BrokenPipeError:  # our reader left: the JSON file is written, say no more
        return reader_left()
    return EXIT_INTERRUPTED if result.interrupted else EXIT_OK
