"""The mutants' tables (shared/tools/mutants/tables.py): what their figures count."""

from __future__ import annotations

from typing import Any

from shared.tools.mutants.tables import summary


def row(name: str, verdict: str) -> dict[str, Any]:
    """One mutant's verdict, as a run saves it."""
    return {"id": name, "verdict": verdict}


def test_a_mutant_whose_line_is_gone_is_no_miss_of_the_new_suite() -> None:
    old = {"mutants": [row("a", "killed"), row("b", "killed"), row("c", "killed")]}
    new = {"mutants": [row("a", "killed"), row("b", "survived"), None]}
    assert summary(old, new) == (
        "3 mutants: the old suite caught 3, the new 1, both 1; caught by the old and missed"
        " by the new: 1 (b); gone, their lines rewritten since: 1 (c)."
    )
