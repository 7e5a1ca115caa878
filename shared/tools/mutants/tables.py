"""The Markdown tables of a run, and the line of figures under each."""

from __future__ import annotations

from typing import Any

from shared.tools.mutants.run import CAUGHT, SURVIVED

HEADER = "| mutant | place | line | mutated |"
RULE = "|---|---|---|---|"


def _cell(text: str) -> str:
    """Text safe inside a table cell: no bar, code in backticks."""
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`" if text else ""


def _place(row: dict[str, Any]) -> str:
    return f"{row['path']}:{row['qualname']}"


def _verdict(row: dict[str, Any] | None) -> str:
    if not row:
        return "gone"
    verdict: str = row["verdict"]
    return verdict


def caught(row: dict[str, Any] | None) -> bool:
    """Whether a row's suite noticed the mutant (failed, errored or hung)."""
    return bool(row) and row is not None and row["verdict"] in CAUGHT


def single(result: dict[str, Any]) -> str:
    """One suite's table: each mutant and its verdict."""
    lines = [
        f"Suite: {result['suite']}.",
        "",
        f"{HEADER} verdict | first failure |",
        f"{RULE}---|---|",
    ]
    for row in result["mutants"]:
        lines.append(
            f"| {row['id']} | {_place(row)} | {row['line']} | {_cell(row['before'])} → "
            f"{_cell(row['after'])} | {row['verdict']} | {_cell(row['first_failure'][:80])} |"
        )
    lines += ["", summary(None, result), ""]
    return "\n".join(lines)


def comparison(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Two suites' verdicts side by side, and the mutants the new one misses named."""
    lines = [
        f"Old suite: {old['suite']}. New suite: {new['suite']}.",
        "",
        f"{HEADER} old | new |",
        f"{RULE}---|---|",
    ]
    for before, after in zip(old["mutants"], new["mutants"], strict=True):
        lines.append(
            f"| {before['id']} | {_place(before)} | {before['line']} | {_cell(before['before'])} → "
            f"{_cell(before['after'])} | {_verdict(before)} | {_verdict(after)} |"
        )
    lines += ["", summary(old, new), ""]
    # What each suite ran for each module's mutants: the same roles, whatever the files' names.
    lines += ["The test files each suite ran, by module mutated:", ""]
    ran: dict[str, tuple[set[str], set[str]]] = {}
    for before, after in zip(old["mutants"], new["mutants"], strict=True):
        files = ran.setdefault(before["path"], (set(), set()))
        files[0].update(before["tests"])
        files[1].update(after.get("tests", []) if after else [])
    for path, (then, now) in sorted(ran.items()):
        lines.append(f"- {path}: old {', '.join(sorted(then))}; new {', '.join(sorted(now))}")
    lines.append("")
    return "\n".join(lines)


def summary(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """The figures: mutants, caught by each suite, by both, and by the old one alone."""
    rows = new["mutants"]
    if old is None:
        found = sum(caught(r) for r in rows)
        return f"{len(rows)} mutants: {found} caught, {len(rows) - found} not caught."
    pairs = list(zip(old["mutants"], rows, strict=True))
    old_caught = sum(caught(a) for a, _ in pairs)
    new_caught = sum(caught(b) for _, b in pairs)
    both = sum(caught(a) and caught(b) for a, b in pairs)
    # A mutant the new run lacks is gone (its line was rewritten): not a miss of the suite.
    missed = [a["id"] for a, b in pairs if caught(a) and b and not caught(b)]
    gone = [a["id"] for a, b in pairs if caught(a) and not b]
    text = (
        f"{len(pairs)} mutants: the old suite caught {old_caught}, the new {new_caught}, "
        f"both {both}; caught by the old and missed by the new: {len(missed)}"
    )
    text += f" ({', '.join(missed)})" if missed else ""
    if gone:
        text += f"; gone, their lines rewritten since: {len(gone)} ({', '.join(gone)})"
    return text + "."


def exercises(results: dict[str, list[dict[str, Any]]], equivalent: dict[str, str]) -> str:
    """The exercises' table: per exercise, each mutant, its verdict, and why if it lives.

    ``equivalent`` gives the reason, by key, of each mutant known to be equivalent.
    """
    lines = [exercise_summary(results, equivalent), ""]
    for name, rows in results.items():
        killed = sum(r["verdict"] in CAUGHT for r in rows)
        explained = sum(r["verdict"] == SURVIVED and r["key"] in equivalent for r in rows)
        lines += [f"## {name}: {killed} of {len(rows)} caught, {explained} equivalent", ""]
        lines += [f"{HEADER} verdict |", f"{RULE}---|"]
        for row in rows:
            verdict = row["verdict"]
            if verdict == SURVIVED:
                reason = equivalent.get(row["key"])
                verdict = f"equivalent: {reason}" if reason else "SURVIVED"
            ident = row["id"] if not row.get("hand_made") else f"{row['id']} (by hand)"
            lines.append(
                f"| {ident} | {_place(row)} | {row['line']} | {_cell(row['before'])} → "
                f"{_cell(row['after'])} | {verdict} |"
            )
        lines.append("")
    return "\n".join(lines)


def exercise_summary(results: dict[str, list[dict[str, Any]]], equivalent: dict[str, str]) -> str:
    """The figures of the exercises' run."""
    rows = [r for found in results.values() for r in found]
    killed = sum(r["verdict"] in CAUGHT for r in rows)
    explained = sum(r["verdict"] == SURVIVED and r["key"] in equivalent for r in rows)
    alive = len(rows) - killed - explained
    return (
        f"{len(results)} exercises, {len(rows)} mutants: {killed} caught, "
        f"{explained} equivalent (each with its reason), {alive} not caught and not explained."
    )
