"""The test site's command line: ``python -m shared.testsite --pages N --latency S --port P``.

Serves a site in the foreground for a class to crawl, and logs every request it
answers so the class can watch them arrive.  ``--hosts 3`` serves it on 127.0.0.1,
127.0.0.2 and 127.0.0.3 at once: three hosts, to crawl with ``--max-per-host``.
``--endless`` adds servers that never finish (shared/testsite/endless.py), to watch a
crawler keep its loop fair (lab 7).
:func:`add_site_arguments` and :func:`site_from_arguments` are shared with
``python -m shared.tools.bench.server``.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections.abc import Sequence

from shared.testsite.server import loopback_hosts, serve_hosts
from shared.testsite.site import Site
from shared.testsite.tls import local_tls
from shared.testsite.traps import ROBOTS_KINDS


def add_site_arguments(parser: argparse.ArgumentParser, *, port: int) -> None:
    """Add the options that define a site (and its port) to a command line."""
    parser.add_argument("--pages", type=int, default=300, help="number of normal pages")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the site")
    parser.add_argument("--fanout", type=int, default=5, help="links per page")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=port, help="port (0: any free port)")
    parser.add_argument("--no-traps", action="store_true", help="serve plain pages only")
    parser.add_argument("--hostile", action="store_true", help="add misbehaving pages")
    parser.add_argument("--wire", action="store_true", help="add responses odd byte by byte")
    parser.add_argument("--wide", type=int, default=0, help="number of slow /wide/ pages")
    parser.add_argument("--wide-delay", type=float, default=0.0, help="delay of /wide/ pages")
    parser.add_argument(
        "--robots", choices=ROBOTS_KINDS, help="what /robots.txt answers (default: a 404)"
    )
    parser.add_argument("--endless", action="store_true", help="add servers that never finish")
    parser.add_argument(
        "--endless-seconds",
        type=float,
        default=15.0,
        metavar="S",
        help="the site ends each endless answer after S seconds (default 15; 0: never)",
    )


def site_from_arguments(args: argparse.Namespace) -> Site:
    """Build the Site that options added by :func:`add_site_arguments` describe."""
    return Site(
        args.pages,
        args.seed,
        args.fanout,
        latency=args.latency,
        traps=not args.no_traps,
        hostile=args.hostile,
        wire=args.wire,
        wide=args.wide,
        wide_delay=args.wide_delay,
        robots=args.robots,
        endless=args.endless,
        endless_s=args.endless_seconds or None,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a site in the foreground for a classroom until Ctrl-C."""
    parser = argparse.ArgumentParser(description="Serve the crawler test site on 127.0.0.1.")
    add_site_arguments(parser, port=8080)
    parser.add_argument(
        "--https", action="store_true", help="serve https, with a throw-away CA (needs trustme)"
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=1,
        metavar="N",
        help="serve the site on 127.0.0.1 .. 127.0.0.N at once, N hosts (for --max-per-host)",
    )
    args = parser.parse_args(argv)
    site = site_from_arguments(args)
    try:
        hosts = loopback_hosts(args.hosts)
    except ValueError as exc:
        parser.error(f"--hosts: {exc}")
    # The access log lets the class watch the crawler's requests arrive.
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="testsite-") as directory:
        tls = local_tls(directory, (*hosts, "localhost")) if args.https else None
        with serve_hosts(site, hosts, args.port, tls=tls) as urls:
            # The wire cases' records differ by stage, their URLs never: any stage counts them.
            count = len(site.expected(urls, stage="stage1_callbacks"))
            print(f"Serving {count} URLs at {' '.join(urls)}  (Ctrl-C to stop)", flush=True)
            if tls is not None:
                print(f"Its CA certificate: {tls.cafile}  (crawl with --cafile)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\nStopping.", flush=True)
