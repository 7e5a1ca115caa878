"""The sentences the exercises' tests say to a student, in English and in Chinese.

A test that fails says why in a sentence from reasons.toml, beside this module:
``reason("s2-queue.join-never-woken")`` is its English, the blanks filled.  The results
of `check` keep that English; `check` says it again in the reader's language from the
same table (shared/tools/exercises/messages.py reads the file: a workspace has the
tests but not always the tool, and the tool imports nothing from the tests).
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

CATALOGUE = Path(__file__).resolve().with_name("reasons.toml")


@cache
def sentences() -> dict[str, dict[str, str]]:
    """Each key's sentence in each language: ``{"en": ..., "zh-CN": ...}``."""
    with CATALOGUE.open("rb") as file:
        return tomllib.load(file)


def reason(key: str, **fields: object) -> str:
    """The English sentence ``key``, its blanks filled: what a failing test says."""
    return sentences()[key]["en"].format(**fields)
