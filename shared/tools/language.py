"""The reader's language and the width of text on a terminal, for the tools: the code is
shared/language.py, which the crawlers' command lines use too.  The tools import it from
here or from there alike."""

from __future__ import annotations

from shared.language import CLOSING as CLOSING
from shared.language import LANGUAGES as LANGUAGES
from shared.language import LOCALE_VARIABLES as LOCALE_VARIABLES
from shared.language import OPENING as OPENING
from shared.language import display_width as display_width
from shared.language import locale_language as locale_language
from shared.language import pad as pad
from shared.language import wrap_columns as wrap_columns
