"""``python -m shared.tools.show STAGE|all``: record a crawl of the built-in site, write the page.

The crawl options are the stages' own (shared/tools/cli.py), with other defaults: a 6-page
site, two tasks, 0.1 s per answer, robots.txt ignored, so that a class can follow every
step.  ``--full-site`` crawls the default test site instead (about 390 URLs, traps and
all).  The page goes to out/show-STAGE.html, opens in the browser when there is one, and
``--screenshot`` also takes a picture of it with headless Chromium.  ``--lang`` picks the
page's language; without it, a locale that says Chinese does, else the reader's browser.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import webbrowser
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from shared import STAGES
from shared.language import add_help_option, chosen_language, help_in
from shared.tools.cli import configure_logging, parse_args
from shared.tools.instruments import watching
from shared.tools.instruments.trace_events import TraceEvents
from shared.tools.language import LANGUAGES, locale_language
from shared.tools.show.page import crawl_data, interesting_step, texts, write
from shared.tools.show.record import recording

#: What the command says on the terminal, in each language (the page has texts.json).
WROTE = {"en": "wrote {}", "zh-CN": "已写出 {}"}
SIZE = {"en": " ({})", "zh-CN": "（{}）"}
NO_SCREENSHOT = {"en": "no screenshot: ", "zh-CN": "没有截图："}
COLON = {"en": ": ", "zh-CN": "："}

#: The crawl the page shows unless told otherwise: small enough to follow step by step.
DEFAULTS = ["--site-pages", "6", "--max-tasks", "2", "--site-latency", "0.1", "--ignore-robots"]


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """The options of the page itself, their help in ``lang``; the rest are crawl options, as
    for any stage."""

    def say(english: str, chinese: str) -> str:
        return chinese if lang == "zh-CN" else english

    parser = argparse.ArgumentParser(
        prog="nox -s show --",
        epilog=say(
            "Any other option is a crawl option, as for the stages (--max-tasks N, "
            "--site-pages N, --site-latency S, ...); the defaults here: ",
            "其他选项都是爬取选项，和各阶段的一样（--max-tasks N、--site-pages N、"
            "--site-latency S……）；这里的默认值：",
        )
        + " ".join(DEFAULTS),
        **help_in(
            lang,
            description=say(
                "Record every step of a crawl of the built-in test site and write a "
                "page that steps through it.",
                "记录对内置测试站点的一次爬取的每一步，写出可以逐步查看它的页面。",
            ),
        ),
    )
    add_help_option(parser, lang)
    parser.add_argument(
        "stage",
        choices=[*STAGES, "all"],
        help=say(
            "one stage, or all three on one time axis",
            "一个阶段，或者 all：三个阶段画在同一条时间轴上",
        ),
    )
    parser.add_argument(
        "--out",
        metavar="PATH",
        help=say("the page (out/show-STAGE.html)", "页面写到哪里（out/show-STAGE.html）"),
    )
    parser.add_argument(
        "--full-site",
        action="store_true",
        help=say(
            "crawl the default test site (about 390 URLs, traps and all), not a 6-page one",
            "爬取默认的测试站点（大约 390 个 URL，包括所有陷阱），而不是 6 页的小站点",
        ),
    )
    parser.add_argument(
        "--obey-robots",
        action="store_true",
        help=say(
            "fetch and obey robots.txt, as crawls do", "像平常的爬取那样抓取并遵守 robots.txt"
        ),
    )
    parser.add_argument(
        "--screenshot",
        nargs="?",
        const="",
        metavar="PATH",
        help=say(
            "also a PNG of the page, by headless Chromium (out/show-STAGE.png)",
            "再用 headless Chromium 给页面截一张 PNG 图（out/show-STAGE.png）",
        ),
    )
    parser.add_argument(
        "--step",
        type=int,
        metavar="N",
        help=say(
            "the step the screenshot shows (a busy one)", "截图显示第几步（默认：一个繁忙的步骤）"
        ),
    )
    parser.add_argument(
        "--big",
        action="store_true",
        help=say(
            "the code beside the lanes, on one 1280x720 screen (the page's #big); "
            "with --screenshot, a picture of that screen",
            "代码显示在泳道旁边，放进一块 1280x720 的屏幕（即页面的 #big）；"
            "和 --screenshot 一起用时，截的就是这块屏幕",
        ),
    )
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help=say(
            "the page's language, and this help's (else Chinese where the locale says so, "
            "else the browser's)",
            "页面和这份帮助的语言（否则按 locale，locale 不是中文时按浏览器的语言）",
        ),
    )
    parser.add_argument(
        "--no-open", action="store_true", help=say("do not open a browser", "不打开浏览器")
    )
    return parser


def crawl_arguments(own: argparse.Namespace, rest: list[str]) -> list[str]:
    """The stage command line the crawl runs with: our defaults, then what was asked."""
    defaults = list(DEFAULTS)
    if own.full_site:
        defaults[0:2] = []
    if own.obey_robots:
        defaults.remove("--ignore-robots")
    return [*defaults, *rest]


def merged_position(crawls: list[dict[str, Any]], index: int, step: int) -> int:
    """Where a crawl's step comes among all the crawls' steps in time order, as on the page.

    The page merges the crawls' steps by time, a tie going to the crawl listed first.
    """
    t = crawls[index]["steps"]["t"][step]
    before = step
    for other, crawl in enumerate(crawls):
        if other != index:
            times = crawl["steps"]["t"]
            before += bisect_right(times, t) if other < index else bisect_left(times, t)
    return before


def picture_facts(crawls: list[dict[str, Any]], step: int) -> dict[str, Any]:
    """What a picture of the page at ``step`` (1-based, all crawls in time order) states:
    the step and the count in the control bar, the crawl whose panel the step is in, its
    own step and count, and the file and line of the code shown at the line that ran."""
    merged = sorted(
        (t, c, i) for c, crawl in enumerate(crawls) for i, t in enumerate(crawl["steps"]["t"])
    )
    _, index, i = merged[step - 1]
    crawl = crawls[index]
    ours = [frame for frame in crawl["chains"][crawl["steps"]["fr"][i]] if frame[1] >= 0]
    return {
        "step": step,
        "steps": len(merged),
        "crawl": crawl["stage"],
        "crawl_step": i + 1,
        "crawl_steps": len(crawl["steps"]["t"]),
        "file": crawl["files"][ours[-1][1]][0] if ours else None,  # the innermost of ours,
        "line": ours[-1][2] if ours else None,  # as the page shows it
    }


def remade_by(own: argparse.Namespace, rest: list[str], lang: str | None) -> list[str]:
    """The arguments that make the same page again (the picture's facts keep them)."""
    argv = [own.stage, *rest, *(["--lang", lang] if lang else [])]
    argv += ["--big"] * own.big + ["--full-site"] * own.full_site
    argv += ["--obey-robots"] * own.obey_robots
    return argv + (["--step", str(own.step)] if own.step else [])


def can_open_browser() -> bool:
    """Tell whether a browser could show the page here: not on CI, not without a display."""
    if os.environ.get("CI"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    said = chosen_language(sys.argv[1:] if argv is None else argv)  # the terminal's language
    words = texts()[said]
    parser = build_parser(said)
    own, rest = parser.parse_known_args(argv)
    args, options = parse_args("nox -s show -- STAGE", crawl_arguments(own, rest))
    if args.roots:
        parser.error(f"show crawls the built-in test site only, not {' '.join(args.roots)}")
    configure_logging(args.verbose, args.quiet, libraries=True)  # the site's server logs
    options = replace(options, progress=False)  # the progress line would mix with the trace
    packages = list(STAGES.values()) if own.stage == "all" else [STAGES[own.stage]]
    out = Path(own.out or f"out/show-{own.stage}.html")

    from shared.testsite import Site, serve  # aiohttp.web: only once we crawl

    pages = args.site_pages
    site = Site(latency=args.site_latency)
    if pages is not None:
        site = Site(pages, traps=False, latency=args.site_latency)
    crawls = []
    # --trace-events: the same crawls for a real trace viewer, one process per stage.
    trace_events = TraceEvents() if args.trace_events else None
    with serve(site) as base_url:
        for package in packages:
            site.reset()  # the flaky page fails again: the same crawl each time
            began = time.monotonic()
            with (
                recording(package, sys.stderr if args.trace else None) as recorder,
                watching(*([trace_events] if trace_events else [])),
            ):
                result = importlib.import_module(package).crawl([base_url], options)
            seconds = time.monotonic() - began
            if recorder.errors:
                print(recorder.errors[0], file=sys.stderr)
                print(f"recording {package} failed {len(recorder.errors)} time(s)", file=sys.stderr)
                return 1
            note = f"{len(result.fetches)} URLs, {len(recorder.steps)} steps, {seconds:.2f} s"
            if result.interrupted:  # Ctrl-C: the page shows the crawl as far as it went
                note += ", interrupted"
            crawls.append(crawl_data(recorder, note))
            # The same facts for the page to say in its reader's language.
            summary = [len(result.fetches), len(recorder.steps), f"{seconds:.2f}"]
            crawls[-1]["summary"] = [*summary, result.interrupted]
            done = words["note.interrupted" if result.interrupted else "note.done"]
            told = done.format(urls=summary[0], steps=summary[1], s=summary[2])
            print(f"{words['title.' + package]}{COLON[said]}{told}", file=sys.stderr)
    if trace_events and args.trace_events:
        size = trace_events.write(args.trace_events)
        print(
            WROTE[said].format(args.trace_events) + SIZE[said].format(f"{size / 1e6:.1f} MB"),
            file=sys.stderr,
        )
    # What the heading says, as facts: the page writes them in its reader's language.
    heading = {
        "stage": own.stage if own.stage == "all" else packages[0],
        "pages": pages,
        "latency": f"{args.site_latency:g}",
        "options": [
            f"--max-tasks {options.max_tasks}",
            *(["--ignore-robots"] if options.ignore_robots else []),
        ],
    }
    # The page opens at a busy step: the first at which the most actors wait on sockets.
    middle = len(crawls) // 2  # with all three: stage 2, the one with most to show
    busy = merged_position(crawls, middle, interesting_step(crawls[middle]))
    lang = own.lang or locale_language()
    size = write(out, crawls, heading, start=busy, lang=lang)
    print(WROTE[said].format(out) + SIZE[said].format(f"{size / 1024:.0f} KiB"), file=sys.stderr)
    if own.screenshot is not None:
        from shared.tools.show.browser import missing, screenshot

        if reason := missing():
            print(f"{NO_SCREENSHOT[said]}{reason}", file=sys.stderr)
            return 2
        picture = Path(own.screenshot or out.with_suffix(".png"))
        screenshot(out, picture, own.step or busy + 1, big=own.big, lang=lang)
        print(WROTE[said].format(picture), file=sys.stderr)
        # Beside it, what it states, and how to make it again: a test remakes the page
        # and fails when the picture no longer says what the command would show now.
        facts = {"argv": remade_by(own, rest, lang), **picture_facts(crawls, own.step or busy + 1)}
        facts_path = picture.with_suffix(".json")
        facts_path.write_text(json.dumps(facts, indent=1) + "\n", encoding="utf-8")
        print(WROTE[said].format(facts_path), file=sys.stderr)
    address = out.resolve().as_uri() + ("#big" if own.big else "")  # the page keeps its lang
    if not own.no_open and can_open_browser() and webbrowser.open(address):
        return 0
    print(out.resolve())
    return 0
