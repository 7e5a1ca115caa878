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

from shared import STAGES, interrupt, log, reader_left
from shared.crawling import Options, root_url
from shared.language import LANGUAGES, add_help_option, chosen_language, help_in
from shared.observe import Observer
from shared.report import CrawlResult, report, write_json
from shared.tls import ssl_context
from shared.tools.instruments import tasktree, watching
from shared.tools.instruments.timeline import Timeline
from shared.tools.instruments.trace import Tracer
from shared.tools.instruments.trace_events import TraceEvents

Crawl = Callable[[Sequence[str], Options], CrawlResult]

# 130 follows the shell's 128 + signal number for SIGINT (Ctrl-C); SIGPIPE's 141 is
# shared.EXIT_PIPE, what every command line of the project exits with when its reader left.
EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 130


def build_parser(prog: str, lang: str = "en") -> argparse.ArgumentParser:
    """Return the argument parser every stage uses, its help in ``lang``."""

    def say(english: str, chinese: str) -> str:
        return chinese if lang == "zh-CN" else english

    parser = argparse.ArgumentParser(
        prog=prog,
        epilog=say(
            "With no ROOT, the built-in test site is started and crawled.",
            "不给 ROOT 时，启动内置的测试站点并爬取它。",
        ),
        **help_in(
            lang,
            description=say(
                "Crawl a web site and report every URL it finds.",
                "爬取一个网站，报告找到的每一个 URL。",
            ),
        ),
    )
    add_help_option(parser, lang)
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help=say(
            "the language of this help, of the report and of the progress line (default: the "
            "locale's, else en)",
            "这份帮助、爬取报告和进度行的语言（默认：按 locale，否则 en）",
        ),
    )
    parser.add_argument(
        "roots", nargs="*", metavar="ROOT", help=say("URL to start from", "开始爬取的 URL")
    )
    parser.add_argument(
        "--max-tasks",
        type=int,
        default=10,
        metavar="N",
        help=say("fetches in flight (10)", "同时进行的抓取数上限（10）"),
    )
    parser.add_argument(
        "--max-per-host",
        type=int,
        metavar="N",
        help=say(
            "fetches in flight to one host at once, robots.txt's included (no limit)",
            "同时抓取同一主机的上限，robots.txt 也算在内（不限）",
        ),
    )
    parser.add_argument(
        "--delay",
        type=float,
        default=0.0,
        metavar="S",
        help=say(
            "seconds between the starts of two requests to one host, to crawl gently (0)",
            "同一主机两次请求开始之间的最少秒数，礼貌地爬取（0）",
        ),
    )
    parser.add_argument(
        "--max-redirect",
        type=int,
        default=10,
        metavar="N",
        help=say("redirects per path (10)", "每条路径最多跟随的重定向次数（10）"),
    )
    parser.add_argument(
        "--max-tries",
        type=int,
        default=4,
        metavar="N",
        help=say("tries per URL (4)", "每个 URL 的尝试次数（4）"),
    )
    parser.add_argument(
        "--exclude", metavar="REGEX", help=say("skip URLs matching this", "跳过与它匹配的 URL")
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--strict",
        dest="strict",
        action="store_true",
        default=True,
        help=say(
            "only the roots' hosts and their www. twins (default)",
            "只爬 ROOT 的主机及其带或不带 www. 的同名主机（默认）",
        ),
    )
    scope.add_argument(
        "--lenient",
        dest="strict",
        action="store_false",
        help=say("any host with the same last two labels", "也爬取最后两级域名相同的任何主机"),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="S",
        help=say("seconds per request (10)", "每个请求最多用的秒数（10）"),
    )
    parser.add_argument(
        "--max-pages",
        type=int,
        metavar="N",
        help=say(
            "fetch at most N pages (robots.txt aside)", "最多抓取 N 个页面（robots.txt 不算）"
        ),
    )
    parser.add_argument(
        "--json",
        metavar="PATH",
        help=say("write the result as JSON ('-': stdout)", "把结果写成 JSON（'-'：写到标准输出）"),
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help=say(
            "add each fetch's start and end time, and when it was queued and connected, "
            "to the JSON",
            "在 JSON 中加入每次抓取入队、开始、连上和结束的时间",
        ),
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help=say(
            "print a line per step of the event loop, to watch fetches interleave",
            "事件循环每走一步打印一行，用来观察各次抓取如何交错进行",
        ),
    )
    parser.add_argument(
        "--trace-events",
        metavar="PATH",
        help=say(
            "write the loop's steps, waits and wake-ups as a Chrome Trace Event file, "
            "for Perfetto or Chromium's trace viewer (also after Ctrl-C)",
            "把事件循环的每一步、每次等待和唤醒写成 Chrome Trace Event 文件，供 Perfetto 或 "
            "Chromium 的 trace 查看器打开（按下 Ctrl-C 之后也会写）",
        ),
    )
    parser.add_argument(
        "--site-pages",
        type=int,
        metavar="N",
        help=say(
            "with no ROOT: a plain built-in site of N pages, without the traps",
            "不给 ROOT 时：内置站点只有 N 个普通页面，没有陷阱",
        ),
    )
    parser.add_argument(
        "--site-latency",
        type=float,
        default=0.0,
        metavar="S",
        help=say(
            "with no ROOT: the built-in site answers after S seconds, to see fetches wait",
            "不给 ROOT 时：内置站点过 S 秒才响应，便于观察等待",
        ),
    )
    parser.add_argument(
        "--fail-on",
        metavar="SUBSTRING",
        help=say(
            "make link parsing raise for URLs containing this (the stack-ripping demo)",
            "URL 含有这个子串时让链接解析抛出异常（堆栈撕裂演示）",
        ),
    )
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument(
        "--insecure",
        action="store_true",
        help=say(
            "do not verify TLS certificates (a warning is logged)",
            "不验证 TLS 证书（会记录一条警告）",
        ),
    )
    trust.add_argument(
        "--cafile",
        metavar="PATH",
        help=say(
            "also trust the CA certificates in this PEM file",
            "额外信任这个 PEM 文件中的 CA 证书",
        ),
    )
    parser.add_argument(
        "--ignore-robots",
        action="store_true",
        help=say("neither fetch nor obey robots.txt", "既不抓取也不遵守 robots.txt"),
    )
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help=say("more log (-vv: debug)", "更多日志（-vv：调试信息）"),
    )
    loud.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help=say("no progress, errors only", "不显示进度，只报告错误"),
    )
    return parser


def parse_args(prog: str, argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, Options]:
    """Parse a command line into its namespace and the crawl's Options.

    A bad value ends the program with a usage message and exit status 2.
    """
    lang = chosen_language(sys.argv[1:] if argv is None else argv)
    parser = build_parser(prog, lang)
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
            lang=lang,
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
    roots: list[str], pages: int | None = None, latency: float = 0.0, lang: str = "en"
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
        said = "正在爬取内置的测试站点" if lang == "zh-CN" else "crawling the built-in test site at"
        print(f"{said} {base_url}", file=sys.stderr)
        yield [base_url]


def write_trace_events(trace: TraceEvents, path: str, quiet: bool, lang: str = "en") -> None:
    """Write the --trace-events file; a file that cannot be written costs the crawl nothing.
    What it says, it says in ``lang``."""
    zh = lang == "zh-CN"
    try:
        size = trace.write(path)
    except OSError as exc:
        said = "无法写入" if zh else "cannot write it"
        print(f"--trace-events {path}: {said}: {exc}", file=sys.stderr)
        return
    if not quiet:
        said = (
            f"已写出 {path}（{size / 1e6:.1f} MB）" if zh else f"wrote {path} ({size / 1e6:.1f} MB)"
        )
        print(said, file=sys.stderr)


def main(stage: str, crawl: Crawl, argv: Sequence[str] | None = None) -> int:
    """Run a stage's ``crawl`` from the command line; return the exit status."""
    args, options = parse_args(f"python -m {stage}", argv)
    # No ROOT: the built-in test site is served from this process, and logs with `logging`.
    libraries = not args.roots or stage == STAGES["stage3"]
    configure_logging(args.verbose, args.quiet, libraries=libraries)
    lang = args.lang or chosen_language([])  # no --lang: the locale's, else English
    log.set_language(lang)  # the crawler's messages too, as the report
    # --trace and --timeline watch the crawl (shared/observe.py); without them nobody does.
    timeline = Timeline() if args.timeline else None
    observers: list[Observer] = [Tracer()] if args.trace else []
    observers += [timeline] if timeline else []
    trace_events = TraceEvents() if args.trace_events else None
    observers += [trace_events] if trace_events else []
    # SIGUSR1, and with -v a first Ctrl-C, print where every task waits (instruments/tasktree.py).
    hooks = [tasktree.dump] if args.verbose else []
    interrupt.at_first_press.extend(hooks)
    try:
        site = roots_or_test_site(args.roots, args.site_pages, args.site_latency, lang)
        try:
            with site as roots, watching(*observers), tasktree.on_sigusr1():
                result = crawl(roots, options)
        finally:  # after Ctrl-C too, with the steps recorded until then
            for hook in hooks:
                interrupt.at_first_press.remove(hook)
            if trace_events and args.trace_events:
                write_trace_events(trace_events, args.trace_events, args.quiet, lang)
        extra = timeline.to_json() if timeline else None
        if args.json and args.json != "-":  # first: the file must not depend on a pipe
            with open(args.json, "w", encoding="utf-8") as out:
                write_json(result, out, extra)
        # With --json -, stdout carries the JSON alone, so the report moves to stderr.
        report(result, sys.stderr if args.json == "-" else sys.stdout, lang)
        if args.json == "-":
            write_json(result, sys.stdout, extra)
        sys.stdout.flush()
    except BrokenPipeError:  # our reader left: the JSON file is written, say no more
        return reader_left()
    return EXIT_INTERRUPTED if result.interrupted else EXIT_OK
