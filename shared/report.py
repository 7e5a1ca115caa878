"""What a crawl leaves behind: one record per URL, the result, the text report, the JSON.

The chapter's crawler kept a ``FetchStatistic`` per URL and printed them with
reporting.py; every stage here fills in the same records, so their reports and their
JSON can be compared line by line.
"""

from __future__ import annotations

import json
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


def format_stat(stat: FetchStatistic) -> str:
    """Return the one report line for a record."""
    if stat.status is None:
        if stat.tries == 0:
            return f"{stat.url} skipped: {stat.error}"
        return f"{stat.url} error: {stat.error} ({stat.tries} tries)"
    line = f"{stat.url} {stat.status}"
    if stat.next_url:
        line += f" -> {stat.next_url}"
    if stat.content_type:
        line += f" {stat.content_type}"
        if stat.encoding:
            line += f"; {stat.encoding}"
    if stat.size is not None:
        line += f" {stat.size} bytes"
    if stat.num_urls:
        line += f" {stat.num_urls} links, {stat.num_new_urls} new"
    if stat.tries > 1:
        line += f" ({stat.tries} tries)"
    if stat.error:
        line += f" error: {stat.error}"
    return line


#: The report's headings, in each language (shared.LANGUAGES).  Only the words change: the
#: figures, the statuses and the types are the same data in any language.
HEADINGS = {
    "en": {
        "finished": "Finished {count} urls in {secs:.3f} secs"
        " (max_tasks={tasks}, {rate:.1f} urls/sec)",
        "interrupted": " -- interrupted",
        "statuses": "Statuses: ",
        "types": "Types: ",
    },
    "zh-CN": {
        "finished": "完成：{count} 个 URL，用时 {secs:.3f} 秒"
        "（max_tasks={tasks}，每秒 {rate:.1f} 个 URL）",
        "interrupted": "，被中断",
        "statuses": "状态：",
        "types": "类型：",
    },
}


def report(result: CrawlResult, out: TextIO, lang: str = "en") -> None:
    """Print a line per URL, sorted, then the totals and the crawl's speed, headed in ``lang``."""
    words = HEADINGS[lang]
    for stat in sorted(result.fetches, key=lambda s: s.url):
        print(format_stat(stat), file=out)
    statuses = Counter(
        str(s.status) if s.status is not None else "error" if s.tries else "skipped"
        for s in result.fetches
    )
    count = len(result.fetches)
    rate = count / result.elapsed_s if result.elapsed_s > 0 else 0.0
    finished = words["finished"].format(
        count=count, secs=result.elapsed_s, tasks=result.max_tasks, rate=rate
    )
    print(finished + (words["interrupted"] if result.interrupted else ""), file=out)
    print(words["statuses"] + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())), file=out)
    types = Counter(s.content_type or "none" for s in result.fetches if s.status is not None)
    print(words["types"] + ", ".join(f"{k}: {v}" for k, v in sorted(types.items())), file=out)


class Progress:
    """A one-line progress display (done, queued, in flight) that rewrites itself.

    It redraws at most ten times a second, so a fast crawl does not spend its time
    printing.  Used only when the output is a terminal.
    """

    def __init__(self, out: TextIO, interval: float = 0.1) -> None:
        """Draw on ``out`` (a terminal) at most once per ``interval`` seconds."""
        self.out = out
        self.interval = interval
        self.last = float("-inf")

    def update(self, now: float, done: int, queued: int, in_flight: int) -> None:
        """Redraw the line if enough time has passed since the last redraw."""
        if now - self.last >= self.interval:
            self.last = now
            self.out.write(f"\r\x1b[Kdone {done}  queued {queued}  in flight {in_flight}")
            self.out.flush()

    def close(self) -> None:
        """Erase the line, so the report starts on a clean one."""
        self.out.write("\r\x1b[K")
        self.out.flush()
