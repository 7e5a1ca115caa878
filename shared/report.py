"""What a crawl leaves behind: one record per URL, the result, the text report, the JSON.

The chapter's crawler kept a ``FetchStatistic`` per URL and printed them with
reporting.py; every stage here fills in the same records, so their reports and their
JSON can be compared line by line.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, TextIO


@dataclass(frozen=True, slots=True)
class FetchStatistic:
    """Everything the crawler learned about one URL.

    ``status`` is None and ``error`` a message when no complete response came back
    after every try, or when the URL was skipped without a try (``tries`` 0: robots.txt
    forbids it).  ``next_url`` is the absolute target of a redirect.  ``size``
    is the body's length in bytes.  ``num_urls`` counts the distinct links in scope
    the page holds and ``num_new_urls`` those not seen before (which depends on the
    order pages were fetched in, so it differs from run to run).
    """

    url: str
    status: int | None = None
    next_url: str | None = None
    error: str | None = None
    size: int | None = None
    content_type: str | None = None
    encoding: str | None = None
    num_urls: int = 0
    num_new_urls: int = 0
    tries: int = 0


@dataclass(slots=True)
class CrawlResult:
    """The outcome of one crawl: its records, in the order they finished.

    When each fetch began and ended is not kept here: a crawl keeps that only for
    whoever watches it (--timeline, shared/tools/instruments/timeline.py).
    """

    stage: str
    roots: list[str]
    fetches: list[FetchStatistic]
    elapsed_s: float
    interrupted: bool = False
    max_tasks: int = 0

    @property
    def urls(self) -> set[str]:
        """The page set of the crawl: every URL it finished with."""
        return {stat.url for stat in self.fetches}

    def by_url(self) -> dict[str, FetchStatistic]:
        """Index the records by URL."""
        return {stat.url: stat for stat in self.fetches}

    def to_json(self) -> dict[str, Any]:
        """Return the result as the JSON document every stage writes."""
        return {
            "stage": self.stage,
            "roots": self.roots,
            "elapsed_s": round(self.elapsed_s, 6),
            "interrupted": self.interrupted,
            "fetches": [asdict(stat) for stat in self.fetches],
        }


def write_json(result: CrawlResult, out: TextIO, extra: dict[str, Any] | None = None) -> None:
    """Write the result's JSON document to an open text file, with ``extra`` keys added."""
    json.dump(result.to_json() | (extra or {}), out, indent=1)
    out.write("\n")


#: The report's words, in each language (shared.LANGUAGES), and the progress line's.  Only
#: the words change: the URLs, figures, statuses, types, and an exception's own name and
#: message (``ConnectionRefusedError: ...``, as Python and the system say it) are the same
#: data in any language, and so is the JSON.
WORDS = {
    "en": {
        "skipped": "{url} skipped: {error}",
        "failed": "{url} error: {error} ({tries} tries)",
        "size": " {size} bytes",
        "links": " {links} links, {new} new",
        "tries": " ({tries} tries)",
        "error": " error: {error}",
        "finished": "Finished {count} urls in {secs:.3f} secs"
        " (max_tasks={tasks}, {rate:.1f} urls/sec)",
        "interrupted": " -- interrupted",
        "statuses": "Statuses: ",
        "types": "Types: ",
        "count": "{key}: {n}",
        "comma": ", ",
        "error-status": "error",
        "skipped-status": "skipped",
        "no-type": "none",
        "progress": "done {done}  queued {queued}  in flight {in_flight}",
    },
    "zh-CN": {
        "skipped": "{url} 已跳过：{error}",
        "failed": "{url} 出错：{error}（尝试 {tries} 次）",
        "size": " {size} 字节",
        "links": " {links} 个链接，其中 {new} 个是新的",
        "tries": "（尝试 {tries} 次）",
        "error": " 出错：{error}",
        "finished": "完成：{count} 个 URL，用时 {secs:.3f} 秒"
        "（max_tasks={tasks}，每秒 {rate:.1f} 个 URL）",
        "interrupted": "，被中断",
        "statuses": "状态：",
        "types": "类型：",
        "count": "{key}：{n}",
        "comma": "，",
        "error-status": "出错",
        "skipped-status": "已跳过",
        "no-type": "无",
        "progress": "已完成 {done}  排队中 {queued}  进行中 {in_flight}",
    },
}

#: The errors the crawler writes in its own words (the others are an exception's name and
#: message), said in Chinese: a pattern of the English record, and its Chinese.  The records
#: keep the English (they are data, compared across stages); only the report translates.
ERRORS_ZH = [
    (re.compile(r"disallowed by robots\.txt"), "robots.txt 不允许抓取"),
    (re.compile(r"disallowed by robots\.txt \((.*)\)"), r"robots.txt 不允许抓取（\1）"),
    (re.compile(r"body larger than (\d+) bytes"), r"响应体超过 \1 字节"),
    (re.compile(r"interrupted before the response"), "在响应到来之前被中断"),
    (re.compile(r"robots\.txt not read: (.*)"), r"robots.txt 无法读取：\1"),
]


def say_error(error: str, lang: str = "en") -> str:
    """A record's error as the report says it in ``lang``: the crawler's own words
    translated, an exception's name and message as they are."""
    if lang == "zh-CN":
        for english, chinese in ERRORS_ZH:
            if english.fullmatch(error):
                return english.sub(chinese, error)
    return error


def format_stat(stat: FetchStatistic, lang: str = "en") -> str:
    """Return the one report line for a record, its words in ``lang``."""
    words = WORDS[lang]
    error = say_error(stat.error, lang) if stat.error else None
    if stat.status is None:
        if stat.tries == 0:
            return words["skipped"].format(url=stat.url, error=error)
        return words["failed"].format(url=stat.url, error=error, tries=stat.tries)
    line = f"{stat.url} {stat.status}"
    if stat.next_url:
        line += f" -> {stat.next_url}"
    if stat.content_type:
        line += f" {stat.content_type}"
        if stat.encoding:
            line += f"; {stat.encoding}"
    if stat.size is not None:
        line += words["size"].format(size=stat.size)
    if stat.num_urls:
        line += words["links"].format(links=stat.num_urls, new=stat.num_new_urls)
    if stat.tries > 1:
        line += words["tries"].format(tries=stat.tries)
    if error:
        line += words["error"].format(error=error)
    return line


def report(result: CrawlResult, out: TextIO, lang: str = "en") -> None:
    """Print a line per URL, sorted, then the totals and the crawl's speed, in ``lang``."""
    words = WORDS[lang]
    for stat in sorted(result.fetches, key=lambda s: s.url):
        print(format_stat(stat, lang), file=out)
    statuses = Counter(
        str(s.status)
        if s.status is not None
        else words["error-status"]
        if s.tries
        else words["skipped-status"]
        for s in result.fetches
    )
    count = len(result.fetches)
    rate = count / result.elapsed_s if result.elapsed_s > 0 else 0.0
    finished = words["finished"].format(
        count=count, secs=result.elapsed_s, tasks=result.max_tasks, rate=rate
    )
    print(finished + (words["interrupted"] if result.interrupted else ""), file=out)
    types = Counter(
        s.content_type or words["no-type"] for s in result.fetches if s.status is not None
    )
    for heading, counts in (("statuses", statuses), ("types", types)):
        listed = (words["count"].format(key=k, n=n) for k, n in sorted(counts.items()))
        print(words[heading] + words["comma"].join(listed), file=out)


class Progress:
    """A one-line progress display (done, queued, in flight) that rewrites itself.

    It redraws at most ten times a second, so a fast crawl does not spend its time
    printing.  Used only when the output is a terminal.
    """

    def __init__(self, out: TextIO, interval: float = 0.1, lang: str = "en") -> None:
        """Draw on ``out`` (a terminal) at most once per ``interval`` seconds, in ``lang``."""
        self.out = out
        self.interval = interval
        self.last = float("-inf")
        self.words = WORDS[lang]["progress"]

    def update(self, now: float, done: int, queued: int, in_flight: int) -> None:
        """Redraw the line if enough time has passed since the last redraw."""
        if now - self.last >= self.interval:
            self.last = now
            line = self.words.format(done=done, queued=queued, in_flight=in_flight)
            self.out.write(f"\r\x1b[K{line}")
            self.out.flush()

    def close(self) -> None:
        """Erase the line, so the report starts on a clean one."""
        self.out.write("\r\x1b[K")
        self.out.flush()
