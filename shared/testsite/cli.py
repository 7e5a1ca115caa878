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
import sys
import tempfile
import time
from collections.abc import Sequence

from shared.language import LANGUAGES, add_help_option, chosen_language, help_in
from shared.testsite.server import loopback_hosts, serve_hosts
from shared.testsite.site import Site
from shared.testsite.tls import local_tls
from shared.testsite.traps import ROBOTS_KINDS


def add_site_arguments(parser: argparse.ArgumentParser, *, port: int, lang: str = "en") -> None:
    """Add the options that define a site (and its port) to a command line, their help in
    ``lang``."""

    def say(english: str, chinese: str) -> str:
        return chinese if lang == "zh-CN" else english

    parser.add_argument(
        "--pages", type=int, default=300, help=say("number of normal pages", "普通页面的数量")
    )
    parser.add_argument(
        "--seed", type=int, default=1, help=say("random seed of the site", "站点的随机种子")
    )
    parser.add_argument(
        "--fanout", type=int, default=5, help=say("links per page", "每个页面的链接数")
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help=say("seconds before each answer", "每次响应之前等待的秒数"),
    )
    parser.add_argument(
        "--port",
        type=int,
        default=port,
        help=say("port (0: any free port)", "端口（0：任一空闲端口）"),
    )
    parser.add_argument(
        "--no-traps", action="store_true", help=say("serve plain pages only", "只提供普通页面")
    )
    parser.add_argument(
        "--hostile", action="store_true", help=say("add misbehaving pages", "加入行为异常的页面")
    )
    parser.add_argument(
        "--wire",
        action="store_true",
        help=say("add responses odd byte by byte", "加入在报文细节上各有古怪之处的响应"),
    )
    parser.add_argument(
        "--wide",
        type=int,
        default=0,
        help=say("number of slow /wide/ pages", "慢速 /wide/ 页面的数量"),
    )
    parser.add_argument(
        "--wide-delay",
        type=float,
        default=0.0,
        help=say("delay of /wide/ pages", "/wide/ 页面的延迟"),
    )
    parser.add_argument(
        "--robots",
        choices=ROBOTS_KINDS,
        help=say("what /robots.txt answers (default: a 404)", "/robots.txt 返回什么（默认：404）"),
    )
    parser.add_argument(
        "--endless",
        action="store_true",
        help=say("add servers that never finish", "加入永远不结束响应的服务器"),
    )
    parser.add_argument(
        "--endless-seconds",
        type=float,
        default=15.0,
        metavar="S",
        help=say(
            "the site ends each endless answer after S seconds (default 15; 0: never)",
            "每个无尽的响应在 S 秒后结束（默认 15；0：永不结束）",
        ),
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


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """The test site's command line, its help in ``lang``."""
    zh = lang == "zh-CN"
    parser = argparse.ArgumentParser(
        prog="python -m shared.testsite",
        **help_in(
            lang,
            description="在 127.0.0.1 上提供爬虫的测试站点。"
            if zh
            else "Serve the crawler test site on 127.0.0.1.",
        ),
    )
    add_help_option(parser, lang)
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help="这份帮助的语言（默认：按 locale，否则 en）"
        if zh
        else "the language of this help (default: the locale's, else en)",
    )
    add_site_arguments(parser, port=8080, lang=lang)
    parser.add_argument(
        "--https",
        action="store_true",
        help="提供 https，使用一个用完即弃的 CA（需要 trustme）"
        if zh
        else "serve https, with a throw-away CA (needs trustme)",
    )
    parser.add_argument(
        "--hosts",
        type=int,
        default=1,
        metavar="N",
        help="同时在 127.0.0.1 .. 127.0.0.N 上提供站点，共 N 个主机（用于 --max-per-host）"
        if zh
        else "serve the site on 127.0.0.1 .. 127.0.0.N at once, N hosts (for --max-per-host)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a site in the foreground for a classroom until Ctrl-C."""
    lang = chosen_language(sys.argv[1:] if argv is None else argv)
    zh = lang == "zh-CN"
    parser = build_parser(lang)
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
            at = " ".join(urls)
            serving = f"Serving {count} URLs at {at}  (Ctrl-C to stop)"
            print(
                f"正在 {at} 上提供 {count} 个 URL（按 Ctrl-C 停止）" if zh else serving, flush=True
            )
            if tls is not None:
                ca = f"Its CA certificate: {tls.cafile}  (crawl with --cafile)"
                print(f"它的 CA 证书：{tls.cafile}（爬取时加 --cafile）" if zh else ca, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\n正在停止。" if zh else "\nStopping.", flush=True)
