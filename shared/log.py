"""The crawler's messages, ``LEVEL name: message`` on stderr, without the ``logging`` module.

Why not the standard library's ``logging``: importing it imports ``threading`` (its
handlers guard their output with locks), in every Python version.  Stages 1 and 2 show
that one thread and a hand-made event loop are enough, so their process should load no
thread machinery at all (tests/test_lesson.py checks it).  And the crawler needs little
of ``logging``: four levels, one threshold set once by the command line (``-q``, ``-v``,
``-vv``: shared/tools/cli.py), a message %-formatted only if it will be shown, and the
traceback of an exception.  That much fits here::

    LOGGER = Logger("crawler")
    LOGGER.info("redirect to %r from %r", new_url, url)  # INFO crawler: redirect to '...
    LOGGER.error("while fetching %r", url, exc_info=exc)  # ERROR crawler: ..., a traceback

The calls are those of ``logging.Logger``, so the crawler reads as any code that logs.  Stage 3's
messages take this way too, so that all three stages print alike; asyncio and aiohttp,
which do log with ``logging``, are configured in shared/tools/cli.py.

A crawl run with ``--lang zh-CN``, or under a Chinese locale, prints its messages in
Chinese, as it prints its report: each message's format has its Chinese in CHINESE (a test
holds every format the crawler logs to it), the arguments, URLs and exceptions, as they are.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

#: The levels, numbered as ``logging`` numbers them.
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
LEVEL_NAMES = {DEBUG: "DEBUG", INFO: "INFO", WARNING: "WARNING", ERROR: "ERROR"}
CHINESE_LEVEL_NAMES = {DEBUG: "调试", INFO: "信息", WARNING: "警告", ERROR: "错误"}

#: Each format the crawler logs, in Chinese, its %-blanks in the same order.
CHINESE = {
    "while fetching %r": "抓取 %r 时出了异常",
    "%r failed after %d tries: %s": "%r 尝试了 %d 次，失败：%s",
    "exception in callback %r": "回调 %r 中出了异常",
    "Exception in callback %r": "回调 %r 中出了异常",
    "--insecure: TLS certificates are NOT verified; anyone between us and a"
    " site can pretend to be it": "--insecure：TLS 证书不做验证；"
    "我们和站点之间的任何人都能冒充这个站点",
    "skipping %r: --max-pages reached": "跳过 %r：已达到 --max-pages",
    "skipping %r: %s": "跳过 %r：%s",
    "TLS handshake for %r done: %s, certificate %s": "%r 的 TLS 握手完成：%s，证书 %s",
    "try %d for %r raised %s": "第 %d 次尝试 %r 时抛出了 %s",
    "redirect to %r from %r": "重定向到 %r（来自 %r）",
    "robots.txt %r: %s, %s": "robots.txt %r：%s，%s",
}


@dataclass(frozen=True, slots=True)
class Record:
    """One message: its level, who said it, its text (formatted), and its exception if any."""

    level: int
    name: str
    message: str
    exc: BaseException | None = None

    @property
    def level_name(self) -> str:
        """The level's name, as printed: ``"WARNING"`` (in Chinese, ``"警告"``)."""
        return (CHINESE_LEVEL_NAMES if language == "zh-CN" else LEVEL_NAMES)[self.level]

    def __str__(self) -> str:
        """The record as printed: ``LEVEL name: message``, then the exception's traceback."""
        colon = "：" if language == "zh-CN" else ": "
        text = f"{self.level_name} {self.name}{colon}{self.message}"
        if self.exc is not None:
            text += "\n" + "".join(traceback.format_exception(self.exc)).rstrip("\n")
        return text


def write(record: Record) -> None:
    """Print a record on stderr, in one write so two threads' records do not interleave.

    A stderr that cannot take it (its reader gone) costs the crawl nothing, as with
    ``logging``: the message is dropped.
    """
    with contextlib.suppress(OSError):
        sys.stderr.write(f"{record}\n")


#: Records below this level are dropped before they are formatted: see set_level.
threshold = WARNING
#: The language messages are printed in: "en", or "zh-CN" (see set_language).
language = "en"
#: What is done with a record: printed.  A test may put another function here to keep them.
handler: Callable[[Record], None] = write


def set_level(level: int) -> None:
    """Show the messages of ``level`` and above from now on (the command line's choice)."""
    global threshold
    threshold = level


def set_language(lang: str) -> None:
    """Print the messages in ``lang`` from now on (the command line's --lang, or the locale)."""
    global language
    language = lang


class Logger:
    """A named source of messages, with the calls of the ``logging.Logger`` the code used."""

    def __init__(self, name: str) -> None:
        """Name the messages' source: ``"crawler"``, or a module's ``__name__``."""
        self.name = name

    def log(
        self, level: int, msg: str, *args: object, exc_info: BaseException | None = None
    ) -> None:
        """Hand on ``msg % args`` at ``level``, with an exception's traceback if given.

        The formatting waits until the level is known to be shown: a debug message of
        every URL costs a comparison, not a string, when nobody asked for -vv.
        """
        if level >= threshold:
            if language == "zh-CN":
                msg = CHINESE.get(msg, msg)
            handler(Record(level, self.name, msg % args if args else msg, exc_info))

    def debug(self, msg: str, *args: object, exc_info: BaseException | None = None) -> None:
        """Log at DEBUG: what only -vv shows (each URL skipped, and why)."""
        self.log(DEBUG, msg, *args, exc_info=exc_info)

    def info(self, msg: str, *args: object, exc_info: BaseException | None = None) -> None:
        """Log at INFO: what -v shows (redirects, retries, robots.txt, TLS)."""
        self.log(INFO, msg, *args, exc_info=exc_info)

    def warning(self, msg: str, *args: object, exc_info: BaseException | None = None) -> None:
        """Log at WARNING: shown unless -q."""
        self.log(WARNING, msg, *args, exc_info=exc_info)

    def error(self, msg: str, *args: object, exc_info: BaseException | None = None) -> None:
        """Log at ERROR: always shown (a bug's traceback, a URL given up on)."""
        self.log(ERROR, msg, *args, exc_info=exc_info)
