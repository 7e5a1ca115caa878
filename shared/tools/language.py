"""The reader's language and the width of text on a terminal, for the tools: the code is
shared/language.py, which the crawlers' command lines use too.  The tools import it from
here or from there alike."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from shared.language import CLOSING as CLOSING
from shared.language import LANGUAGES as LANGUAGES
from shared.language import LOCALE_VARIABLES as LOCALE_VARIABLES
from shared.language import OPENING as OPENING
from shared.language import display_width as display_width
from shared.language import locale_language as locale_language
from shared.language import pad as pad
from shared.language import wrap_columns as wrap_columns


class Phrasebook:
    """A tool's sentences in Chinese: a JSON file that maps each English sentence to its own.

    The code keeps writing its English, ``book.say("wrote {}", lang).format(path)``, so a
    reader of the code reads one language; tests/test_readme.py fails on a sentence of the
    code the file lacks, and on an entry the code no longer says.
    """

    def __init__(self, path: Path) -> None:
        """The book in ``path``, read when first asked."""
        self.path = path

    @functools.cached_property
    def chinese(self) -> dict[str, str]:
        """Each English sentence and its Chinese."""
        said: dict[str, str] = json.loads(self.path.read_text("utf-8"))
        return said

    def say(self, english: str, lang: str) -> str:
        """``english`` in ``lang``: itself, or its Chinese from the book."""
        return self.chinese.get(english, english) if lang == "zh-CN" else english
