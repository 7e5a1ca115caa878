"""`python -m shared.tools.mutants`: list mutants, run them on tests, write the tables.

    list TARGET...                   the mutants of files or functions (path.py[:Class.name])
    lesson [SUITE] [--save F] [--against F] [--table F]
                                     the sample lesson.toml picks, on the suite's selections
    exercises [NAME...] [--table F]  every exercise's emptied functions, on its own tests
    table FILE                       the table of results saved with --save

SUITE is where tests/ (and pytest's settings in pyproject.toml) come from: `--tests-from
REV` (a git revision), `--tests DIR`, or by default the checkout's own.  The code mutated
is always the checkout's, and the checkout itself is never written to.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from shared.tools.mutants import tables
from shared.tools.mutants.mutate import Mutant, MutantError, mutants_in
from shared.tools.mutants.run import (
    CAUGHT,
    KILLED,
    SURVIVED,
    TIMEOUT,
    Outcome,
    RunError,
    failed_test,
    run_mutant,
    scratch_copy,
    select_files,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LESSON_PLAN = HERE / "lesson.toml"
EXERCISE_PLAN = HERE / "exercises.toml"
#: The exercises' own limit per test (their conftest reads it): a mutant's endless loop
#: should end in seconds, not in the 20 a student is given.
EXERCISE_TEST_LIMIT = "5"


def exercise_targets(name: str) -> list[str]:
    """The functions exercise ``name`` empties, as path:qualname."""
    from shared.tools.exercises.catalog import named

    return [str(target) for target in named(name).replace]


def pick_lesson_mutants(plan: dict[str, Any]) -> list[Mutant]:
    """The mutants lesson.toml picks, in its order."""
    chosen: list[Mutant] = []
    keys: set[str] = set()
    for pick in plan["pick"]:
        if "exercise" in pick:
            targets = exercise_targets(pick["exercise"])
        else:
            targets = pick.get("targets") or [pick["target"]]
        pool = [m for t in targets for m in mutants_in(ROOT, t) if m.key not in keys]
        for mutant in sorted(pool, key=Mutant.rank)[: pick["count"]]:
            chosen.append(mutant)
            keys.add(mutant.key)
    return chosen


def selection_for(plan: dict[str, Any], path: str) -> dict[str, Any]:
    """The [[selection]] of lesson.toml whose modules match ``path``."""
    for selection in plan["selection"]:
        if any(fnmatch.fnmatch(path, pattern) for pattern in selection["modules"]):
            return selection  # type: ignore[no-any-return]
    raise MutantError(f"lesson.toml has no selection for {path}")


def judge(tree: Path, mutant: Mutant, args: list[str], limit: float) -> Outcome:
    """Run a mutant; a kill must fail again when its failing test runs alone, a hang twice.

    On a loaded machine a test of timing may fail once for no fault of the mutant; the
    second run of that one test tells such a failure from a kill.  If it passes, the whole
    selection runs once more and that verdict stands.
    """
    outcome = run_mutant(tree, mutant, args, limit)
    if outcome.verdict == TIMEOUT:
        # A busy machine slows a whole selection down: a hang must outlast twice the limit.
        return run_mutant(tree, mutant, args, 2 * limit)
    node = failed_test(outcome.first_failure)
    if outcome.verdict != KILLED or node is None:
        return outcome
    try:
        # The test alone takes no longer than the selection up to it did, give or take.
        shorter = min(limit, 2 * outcome.seconds + 30)
        again = run_mutant(tree, mutant, [*options_only(args), node], shorter)
    except RunError:
        return outcome  # the id did not select the test again: the first verdict stands
    if again.verdict in CAUGHT:
        return outcome
    print(f"    {node} passed when run again: the whole selection runs once more", flush=True)
    return run_mutant(tree, mutant, args, limit)


def options_only(args: list[str]) -> list[str]:
    """The options of a pytest command line (``--stage stage1``), without its file names."""
    kept: list[str] = []
    for arg in args:
        if arg.startswith("tests/") and arg.endswith(".py"):
            continue
        kept.append(arg)
    return kept


def make_tree(args: argparse.Namespace, into: Path) -> str:
    """Make the scratch copy the arguments ask for; return words that name its suite."""
    tests_dir = Path(args.tests).resolve() if args.tests else None
    scratch_copy(ROOT, into, args.tests_from, tests_dir)
    if args.tests_from:
        return f"tests/ at {args.tests_from}"
    return f"tests/ of {tests_dir}" if tests_dir else "tests/ of the checkout"


def lesson(args: argparse.Namespace) -> int:
    """Run the lesson's sample of mutants on the chosen suite; save and compare as asked."""
    plan = tomllib.loads(LESSON_PLAN.read_text(encoding="utf-8"))
    if args.against:
        earlier = json.loads(Path(args.against).read_text(encoding="utf-8"))
        if args.only:
            earlier["mutants"] = [r for r in earlier["mutants"] if r["id"] in args.only]
        current = {m.key: m for m in pick_all(earlier["mutants"])}
        wanted: list[Mutant | None] = [current.get(row["key"]) for row in earlier["mutants"]]
    else:
        earlier = None
        wanted = list(pick_lesson_mutants(plan))
        if args.only:
            wanted = [m for m in wanted if m is not None and m.ident in args.only]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        tree = Path(scratch)
        suite = make_tree(args, tree)
        print(f"{len(wanted)} mutants, suite: {suite}", flush=True)
        started = time.monotonic()
        for index, mutant in enumerate(wanted, 1):
            if mutant is None:
                rows.append({})
                continue
            selection = selection_for(plan, mutant.path)
            files = select_files(tree, selection["tests"])
            if not files:
                raise RunError(f"no test file of {suite} matches {selection['tests']}")
            pytest_args = [*selection.get("args", []), *files]
            outcome = judge(tree, mutant, pytest_args, args.limit)
            print(
                f"{index:3}/{len(wanted)} {mutant.ident:40} {outcome.verdict:8} "
                f"{outcome.seconds:6.1f} s  {outcome.first_failure[:90]}",
                flush=True,
            )
            rows.append(row_of(mutant, outcome, files))
        print(f"{time.monotonic() - started:.0f} s in all", flush=True)
    result = {"suite": suite, "mutants": rows}
    if args.save:
        write(args.save, json.dumps(result, indent=1) + "\n")
    if args.table:
        text = tables.comparison(earlier, result) if earlier else tables.single(result)
        write(args.table, text)
    print(tables.summary(earlier, result))
    return 0


def pick_all(rows: list[dict[str, Any]]) -> list[Mutant]:
    """The current mutants of every function the saved rows name."""
    targets = sorted({f"{row['path']}:{row['qualname']}" for row in rows})
    return [mutant for target in targets for mutant in mutants_in(ROOT, target)]


def row_of(mutant: Mutant, outcome: Outcome, files: list[str]) -> dict[str, Any]:
    """One mutant's line of a results file."""
    fields = asdict(mutant)
    for private in ("start", "stop", "replacement", "number"):
        fields.pop(private)
    return {
        "id": mutant.ident,
        "key": mutant.key,
        **fields,
        "verdict": outcome.verdict,
        "seconds": outcome.seconds,
        "first_failure": outcome.first_failure,
        "tests": files,
    }


def exercise_mutants(name: str, plan: dict[str, Any], most: int) -> tuple[list[Mutant], list[str]]:
    """The mutants of an exercise's functions, and the names of the hand-made ones.

    With more than ``most``, a sample: each function keeps a share of ``most`` in
    proportion to its mutants (at least two), the lowest SHA-256 of their keys first.
    The hand-made mutants of exercises.toml are always kept.
    """
    by_function = {t: mutants_in(ROOT, t) for t in exercise_targets(name)}
    total = sum(len(found) for found in by_function.values())
    chosen: list[Mutant] = []
    for found in by_function.values():
        share = len(found) if total <= most else max(2, math.floor(most * len(found) / total))
        keep = {m.key for m in sorted(found, key=Mutant.rank)[:share]}
        chosen += [m for m in found if m.key in keep]
    hand_made: list[str] = []
    for entry in plan.get("hand-made", []):
        if entry["exercise"] == name:
            mutant = hand_made_mutant(entry)
            chosen.append(mutant)
            hand_made.append(mutant.key)
    return chosen, hand_made


def hand_made_mutant(entry: dict[str, Any]) -> Mutant:
    """A mutant written by hand in exercises.toml: one line of a function replaced."""
    path, _, qualname = entry["target"].partition(":")
    text = (ROOT / path).read_text(encoding="utf-8")
    data = text.encode("utf-8")
    old = entry["find"].encode("utf-8")
    if data.count(old) != 1:
        raise MutantError(f"{entry['target']}: {entry['find']!r} is not in the file once")
    start = data.index(old)
    line = data[:start].count(b"\n") + 1
    return Mutant(
        path=path,
        qualname=qualname,
        number=0,
        kind=entry["kind"],
        line=line,
        before=" / ".join(part.strip() for part in entry["find"].splitlines() if part.strip()),
        after=" / ".join(part.strip() for part in entry["replace"].splitlines() if part.strip()),
        start=start,
        stop=start + len(old),
        replacement=entry["replace"],
    )


def equivalents(plan: dict[str, Any]) -> dict[str, str]:
    """The equivalent mutants exercises.toml lists: the reason of each, by key."""
    return {entry["key"]: entry["reason"] for entry in plan.get("equivalent", [])}


def exercises(args: argparse.Namespace) -> int:
    """Run every exercise's mutants on its own tests; write the table."""
    import os

    from shared.tools.exercises.catalog import all_exercises

    plan = tomllib.loads(EXERCISE_PLAN.read_text(encoding="utf-8"))
    equivalent = equivalents(plan)
    names = args.names or [e.name for e in all_exercises()]
    os.environ["EXERCISE_TIME_LIMIT"] = EXERCISE_TEST_LIMIT
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="mutants-") as scratch:
        tree = Path(scratch)
        make_tree(args, tree)
        for name in names:
            from shared.tools.exercises.catalog import named

            tests = named(name).tests
            mutants, hand_made = exercise_mutants(name, plan, args.most)
            started = time.monotonic()
            rows = []
            for mutant in mutants:
                outcome = judge(tree, mutant, [tests], args.limit)
                row = row_of(mutant, outcome, [tests])
                row["hand_made"] = mutant.key in hand_made
                rows.append(row)
                print(
                    f"{name:16} {mutant.ident:36} {outcome.verdict:8} {outcome.seconds:5.1f} s"
                    f"  {mutant.kind}: {mutant.after[:60]}",
                    flush=True,
                )
            spent = time.monotonic() - started
            print(f"{name}: {len(rows)} mutants in {spent:.0f} s", flush=True)
            results[name] = rows
    if args.save:
        # A run of some exercises replaces theirs in the file and keeps the others'.
        saved = Path(args.save)
        kept = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
        order = [e.name for e in all_exercises()]
        merged = {**kept, **results}
        results = {n: merged[n] for n in sorted(merged, key=lambda n: order.index(n))}
        write(args.save, json.dumps(results, indent=1) + "\n")
    if args.table:
        write(args.table, tables.exercises(results, equivalent))
    left = [r for rows in results.values() for r in rows if r["verdict"] == SURVIVED]
    unexplained = [r for r in left if r["key"] not in equivalent]
    print(tables.exercise_summary(results, equivalent))
    return 1 if unexplained else 0


def write(path: str, text: str) -> None:
    """Write a results file or a table, making its folder if need be."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")


def table(args: argparse.Namespace) -> int:
    """Print the table of saved results, the lesson's or the exercises'."""
    saved = json.loads(Path(args.results).read_text(encoding="utf-8"))
    if "mutants" in saved:
        print(tables.single(saved), end="")
    else:
        plan = tomllib.loads(EXERCISE_PLAN.read_text(encoding="utf-8"))
        print(tables.exercises(saved, equivalents(plan)), end="")
    return 0


def listing(args: argparse.Namespace) -> int:
    """Print the mutants of the targets, one a line."""
    for target in args.targets:
        for mutant in mutants_in(ROOT, target):
            print(f"{mutant.ident}  line {mutant.line}  {mutant.kind}: {mutant.after}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The command line."""
    top = argparse.ArgumentParser(prog="python -m shared.tools.mutants", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    listed = commands.add_parser("list", help="print the mutants of files or functions")
    listed.add_argument("targets", nargs="+", metavar="TARGET", help="path.py[:Class.name]")
    listed.set_defaults(run=listing)
    shown = commands.add_parser("table", help="print the table of saved results")
    shown.add_argument("results", metavar="FILE", help="what --save wrote")
    shown.set_defaults(run=table)
    for name, helped, run in (
        ("lesson", "run the sample of lesson.toml on its selections", lesson),
        ("exercises", "run each exercise's mutants on its tests", exercises),
    ):
        command = commands.add_parser(name, help=helped)
        suite = command.add_mutually_exclusive_group()
        suite.add_argument("--tests-from", metavar="REV", help="tests/ of this git revision")
        suite.add_argument("--tests", metavar="DIR", help="this folder as tests/")
        command.add_argument("--limit", type=float, default=240.0, help="seconds per mutant (240)")
        command.add_argument("--save", metavar="FILE", help="write the results, JSON")
        command.add_argument("--table", metavar="FILE", help="write the table, Markdown")
        command.set_defaults(run=run)
    lesson_command = commands.choices["lesson"]
    lesson_command.add_argument("--against", metavar="FILE", help="compare with saved results")
    lesson_command.add_argument("--only", nargs="+", metavar="ID", help="run these mutants only")
    exercise_command = commands.choices["exercises"]
    exercise_command.add_argument("names", nargs="*", metavar="NAME", help="default: all")
    exercise_command.add_argument(
        "--most", type=int, default=20, help="mutants per exercise before sampling (20)"
    )
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; errors become one line on stderr and exit status 2."""
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (MutantError, RunError) as error:
        print(f"mutants: {error}", file=sys.stderr)
        return 2
