"""The command line: `python -m shared.tools.exercises VERB`, as `nox -s exercise -- VERB` runs it.

Verbs: list, start, check, hint, solve (see shared/tools/exercises/README.md).  Exit
status: 0 when all went well (for `check`, when every task passed), 1 when a check
found a failed task, 2 when the command could not do its work (an unknown exercise,
a folder that is not a workspace, a workspace that exists already).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from shared.tools.exercises import answers, checking, workspace
from shared.tools.exercises.bodies import BodyError
from shared.tools.exercises.catalog import Exercise, ExerciseError, all_exercises, find

COMMAND = "nox -s exercise --"  # how the README tells students to run this tool
EXIT_PIPE = 141  # 128 + SIGPIPE, as the crawlers' command line (shared/cli.py) exits


class Usage(Exception):
    """A request the tool cannot carry out: printed, exit status 2."""


def parser() -> argparse.ArgumentParser:
    """The argument parser of every verb."""
    top = argparse.ArgumentParser(
        prog="python -m shared.tools.exercises",
        description="Rebuild the crawlers one idea at a time: exercises with tests per task.",
    )
    verbs = top.add_subparsers(dest="verb", metavar="VERB")
    listing = verbs.add_parser("list", help="every exercise: stage, idea, summary")
    listing.add_argument("--names", action="store_true", help="names only, one a line")
    start = verbs.add_parser("start", help="make a workspace with the exercise's functions emptied")
    start.add_argument("name", metavar="NAME")
    start.add_argument("--into", type=Path, metavar="DIR", help="default: out/exercises/NAME")
    start.add_argument("--force", action="store_true", help="replace an existing workspace")
    check = verbs.add_parser("check", help="run the exercise's tests on the workspace, per task")
    check.add_argument("name", metavar="NAME")
    check.add_argument("--in", dest="folder", type=Path, metavar="DIR")
    check.add_argument(
        "--time-limit",
        type=float,
        default=checking.DEFAULT_TIME_LIMIT,
        metavar="S",
        help=f"seconds each test may take ({checking.DEFAULT_TIME_LIMIT:g})",
    )
    check.add_argument(
        "--total-limit",
        type=float,
        metavar="S",
        help="seconds the whole check may take (default: 10 time limits and a minute)",
    )
    check.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output")
    hint = verbs.add_parser("hint", help="the next hint, one at a time")
    hint.add_argument("name", metavar="NAME")
    solve = verbs.add_parser("solve", help="put the reference solution in, and show the diff")
    solve.add_argument("name", metavar="NAME")
    solve.add_argument("--in", dest="folder", type=Path, metavar="DIR")
    solve.add_argument("--task", type=int, metavar="N", help="only task N's reference")
    return top


def show_list(names_only: bool) -> None:
    """Print every exercise in the chapter's order."""
    exercises = all_exercises()
    if names_only:
        for exercise in exercises:
            print(exercise.name)
        return
    if not exercises:
        print("no exercises yet")
        return
    width = max(len(e.name) for e in exercises) + 2
    stage_width = max(len(e.stage) for e in exercises) + 2
    for exercise in exercises:
        print(f"{exercise.name:<{width}}{exercise.stage:<{stage_width}}{exercise.idea}")
        for line in textwrap.wrap(exercise.summary, 88):
            print(" " * 4 + line)
    print(f"\nstart one with: {COMMAND} start NAME")


def exercise_named(name: str) -> Exercise:
    """The exercise, or Usage listing the ones there are."""
    exercise = find(name)
    if exercise is None:
        names = ", ".join(e.name for e in all_exercises()) or "none yet"
        raise Usage(f"no exercise named {name!r}; the exercises: {names}")
    return exercise


def folder_of(name: str, given: Path | None) -> tuple[Path, str]:
    """The workspace folder, and the command that starts it there."""
    if given is None:
        return workspace.default_workspace(name), f"{COMMAND} start {name}"
    return given.resolve(), f"{COMMAND} start {name} --into {given}"


def do_start(exercise: Exercise, into: Path | None, force: bool) -> int:
    """`start`: make the workspace and say what to do next."""
    folder, _ = folder_of(exercise.name, into)
    folder = workspace.start(exercise, folder, force=force)
    where = "" if into is None else f" --in {into}"
    emptied = "\n".join(f"  {target}" for target in exercise.replace)
    print(f"workspace for {exercise.name}: {folder}")
    print(f"emptied, for you to write again:\n{emptied}")
    print(f"read {folder / 'INSTRUCTIONS.md'}, then: {COMMAND} check {exercise.name}{where}")
    return 0


def do_check(exercise: Exercise, args: argparse.Namespace) -> int:
    """`check`: one line per task; 0 exactly when every task passed."""
    folder, how = folder_of(exercise.name, args.folder)
    workspace.require_workspace(exercise, folder, how)
    result = checking.run_check(
        exercise, folder, args.time_limit, args.total_limit, verbose=args.verbose
    )
    for task in result.tasks:
        print(task.line())
    for problem in result.problems:
        print(f"problem: {problem}")
    done = sum(task.passed for task in result.tasks)
    print(f"{exercise.name}: {done} of {len(result.tasks)} tasks passed")
    if not result.passed and not args.verbose:
        print(f"(each test's own report: {COMMAND} check {exercise.name} --verbose)")
    return 0 if result.passed else 1


def do_hint(exercise: Exercise) -> int:
    """`hint`: the next hint; after the last one, all of them."""
    hints = exercise.hints
    if not hints:
        print(f"{exercise.name} has no hints: INSTRUCTIONS.md is all there is")
        return 0
    shown = workspace.hints_shown(exercise)
    if shown < len(hints):
        print(f"hint {shown + 1} of {len(hints)}: {hints[shown]}")
        workspace.set_hints_shown(exercise, shown + 1)
        return 0
    print(f"no more hints for {exercise.name}; here are all {len(hints)}:")
    for number, text in enumerate(hints, 1):
        print(f"hint {number}: {text}")
    return 0


def do_solve(exercise: Exercise, given: Path | None, task: int | None = None) -> int:
    """`solve`: the reference bodies in (all, or task ``task``'s), the diff out."""
    folder, how = folder_of(exercise.name, given)
    workspace.require_workspace(exercise, folder, how)
    tasks = answers.load(exercise).tasks
    if task is not None and task not in tasks:
        raise Usage(f"{exercise.name} has no task {task}; its tasks: {', '.join(map(str, tasks))}")
    diff, notes = workspace.solve(exercise, folder, task)
    for note in notes:
        print(f"note: {note}")
    if not diff:
        print(f"{folder} already has the reference solution: nothing changed")
        return 0
    print(diff, end="")
    print(f"\nthe reference solution is in {folder}; what was there is in {workspace.BACKUP}/")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; return the exit status."""
    args = parser().parse_args(argv)
    try:
        status = run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # Our reader left (`| head`): stop quietly, as the crawlers' command line does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())
        return EXIT_PIPE
    return status


def run(args: argparse.Namespace) -> int:
    """Carry out the verb the arguments name; return the exit status."""
    try:
        if args.verb in (None, "list"):
            show_list(names_only=getattr(args, "names", False))
            return 0
        exercise = exercise_named(args.name)
        if args.verb == "start":
            return do_start(exercise, args.into, args.force)
        if args.verb == "check":
            return do_check(exercise, args)
        if args.verb == "hint":
            return do_hint(exercise)
        return do_solve(exercise, args.folder, args.task)
    except Usage as error:
        print(error, file=sys.stderr)
        show_list(names_only=False)
        return 2
    except (workspace.WorkspaceError, ExerciseError, BodyError, SyntaxError) as error:
        print(error, file=sys.stderr)
        return 2
