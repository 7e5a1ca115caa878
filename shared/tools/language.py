"""The language a tool speaks to its reader, where the reader did not name one.

The show page (shared/tools/show/) and the exercise tool (shared/tools/exercises/) both
take ``--lang``; without it, both ask this module what the environment's locale says.
"""

from __future__ import annotations

import os

#: The languages the tools speak: English, and the Chinese of the pages named *.zh-CN.md.
LANGUAGES = ("en", "zh-CN")


def locale_language(environ: dict[str, str] | None = None) -> str | None:
    """ "zh-CN" where the environment's locale says Chinese, else None (the tool's default).

    The first of LC_ALL, LC_MESSAGES and LANG that is set (and not empty) decides, as it
    does for any program's messages: LC_ALL=C.UTF-8 with LANG=zh_CN.UTF-8 is not Chinese.
    """
    environ = dict(os.environ) if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if value := environ.get(name):
            return "zh-CN" if value.lower().startswith("zh") else None
    return None
