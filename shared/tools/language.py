"""The language a tool speaks to its reader, where the reader did not name one, and how
wide its text is on a terminal.

The show page (shared/tools/show/) and the exercise tool (shared/tools/exercises/) both
take ``--lang``; without it, both ask this module what the environment's locale says.
A terminal gives an East Asian Wide character (中文) two columns: the side-by-side diff
(shared/tools/sidebyside.py) and the exercise tool's tables pad and wrap by
``display_width``, not by ``len``, so that a line of Chinese keeps the columns aligned.
"""

from __future__ import annotations

import os
import unicodedata

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
