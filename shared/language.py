"""The language a command speaks to its reader, where the reader did not name one, and how
wide its text is on a terminal.

Every command line of the project takes ``--lang``: the crawlers' and the test site's
(their --help, the crawl's report and progress line), the show page (shared/tools/show/) and the
exercise tool (shared/tools/exercises/); without it, each asks this module what the
environment's locale says.  A terminal gives an East Asian Wide character (中文) two
columns: the side-by-side diff (shared/tools/sidebyside.py), the exercise tool's tables
and the Chinese --help pad and wrap by ``display_width``, not by ``len``, so that a line
of Chinese keeps the columns aligned.  (shared/tools/language.py gives the tools the
same names.)
"""

from __future__ import annotations

import argparse
import os
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

#: The languages the tools speak: English, and the Chinese of the pages named *.zh-CN.md.
LANGUAGES = ("en", "zh-CN")
#: The environment variables that say a program's language, the first one set deciding.
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")


def locale_language(environ: dict[str, str] | None = None) -> str | None:
    """ "zh-CN" where the environment's locale says Chinese, else None (the tool's default).

    The first of LC_ALL, LC_MESSAGES and LANG that is set (and not empty) decides, as it
    does for any program's messages: LC_ALL=C.UTF-8 with LANG=zh_CN.UTF-8 is not Chinese.
    """
    environ = dict(os.environ) if environ is None else environ
    for name in LOCALE_VARIABLES:
        if value := environ.get(name):
            return "zh-CN" if value.lower().startswith("zh") else None
    return None


def chosen_language(argv: Sequence[str]) -> str:
    """The language a command line speaks: the last ``--lang L`` (or ``--lang=L``) of ``argv``
    that names one of LANGUAGES, else the locale's, else English.

    Read before the parser is built, so that ``--help`` anywhere on the line prints the
    help in that language; a value not in LANGUAGES is left to the parser to refuse.
    """
    chosen = None
    for at, arg in enumerate(argv):
        if arg == "--":
            break
        value = argv[at + 1] if arg == "--lang" and at + 1 < len(argv) else None
        value = arg.removeprefix("--lang=") if arg.startswith("--lang=") else value
        chosen = value if value in LANGUAGES else chosen
    return chosen or locale_language() or "en"


#: Chinese punctuation that closes a phrase: a line never starts with one.
CLOSING = "，。、；：！？）》」』”’"
#: Chinese punctuation that opens one: a line never ends with one.
OPENING = "（《「『“‘"


def display_width(text: str) -> int:
    """The columns a terminal gives ``text``: an East Asian Wide (or Fullwidth) character
    takes two, any other one."""
    return sum(1 + (unicodedata.east_asian_width(char) in "WF") for char in text)


def pad(text: str, columns: int) -> str:
    """``text`` and enough spaces to fill ``columns`` columns (f"{text:<n}" counts characters)."""
    return text + " " * (columns - display_width(text))


def _breaks_before(text: str, at: int) -> bool:
    """May a line end before ``text[at]``?  At a space; and, as Chinese is set, between two
    characters when either is wide (no words to keep whole), unless punctuation forbids it."""
    before, after = text[at - 1], text[at]
    if after == " ":
        return True
    wide = display_width(before + after) > 2
    return wide and after not in CLOSING and before not in OPENING and before != " "


def wrap_columns(text: str, columns: int) -> list[str]:
    """``text`` in lines of at most ``columns`` columns: English breaks at its spaces, Chinese
    between any two characters (textwrap counts characters, and breaks only at spaces)."""
    text = " ".join(text.split())
    lines = []
    while display_width(text) > columns:
        fits = next((k for k in range(len(text), 0, -1) if display_width(text[:k]) <= columns), 1)
        cut = next((k for k in range(fits, 0, -1) if _breaks_before(text, k)), fits)
        lines.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return [*lines, text] if text else lines


#: argparse's own words, in Chinese: the usage line's prefix and the sections' titles.
USAGE_ZH = "用法："
TITLES_ZH = {"positional arguments": "位置参数", "options": "选项"}


class ChineseHelp(argparse.HelpFormatter):
    """argparse's help with its own words in Chinese too: the usage line's prefix and the
    titles of the sections.  The options, and what a program reads, are the same."""

    def add_usage(self, *args: Any, **kwargs: Any) -> None:
        """The usage, prefixed 用法： unless the caller gave a prefix."""
        if len(args) < 4:
            kwargs.setdefault("prefix", USAGE_ZH)
        super().add_usage(*args, **kwargs)

    def start_section(self, heading: str | None) -> None:
        """A section, its argparse title said in Chinese."""
        super().start_section(TITLES_ZH.get(heading or "", heading))

    def _split_lines(self, text: str, width: int) -> list[str]:
        """A help text in lines of ``width`` columns: a Chinese character takes two, and a
        run of them has no spaces to break at (argparse counts characters, breaks at spaces)."""
        return wrap_columns(text, width)

    def format_help(self) -> str:
        """The help; the usage's wrapped lines indented under its first option, as argparse
        counts the prefix's characters but a terminal gives each of them two columns, and
        the sections' titles ended by a Chinese colon, as 用法： is."""
        text = super().format_help()
        usage, blank, rest = text.partition("\n\n")
        if usage.startswith(USAGE_ZH):
            usage = usage.replace("\n", "\n" + " " * len(USAGE_ZH))
        # argparse ends a title with an ASCII colon: a Chinese title, argparse's or a
        # group's, ends with a Chinese one.
        rest = re.sub(r"^([^\s].*[\u4e00-\u9fff].*):$", r"\1：", rest, flags=re.MULTILINE)
        return usage + blank + rest

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        """The description and epilog, wrapped by columns as the options' help is."""
        return "\n".join(indent + line for line in wrap_columns(" ".join(text.split()), width))


def help_in(lang: str, *, description: str) -> dict[str, Any]:
    """The keywords of an ArgumentParser whose help is in ``lang``: its formatter, and no -h
    of argparse's (add_help_option gives one whose words are that language's too)."""
    formatter = ChineseHelp if lang == "zh-CN" else argparse.HelpFormatter
    return {"description": description, "formatter_class": formatter, "add_help": False}


def add_help_option(parser: argparse.ArgumentParser, lang: str) -> None:
    """Add -h/--help, its words in ``lang`` (a parser made with help_in has none of its own)."""
    zh = lang == "zh-CN"
    parser.add_argument(
        "-h",
        "--help",
        action="help",
        help="显示这份帮助并退出" if zh else "show this help and exit",
    )
