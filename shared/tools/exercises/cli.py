"""The command line: `python -m shared.tools.exercises VERB`, as `nox -s exercise -- VERB` runs it.

Verbs: list, start, check, hint, solve, handout, grade (see shared/tools/exercises/README.md
and GRADING.md), and lab (list, apply NAME, undo NAME: the labs' changes, see
labs/README.md).  Exit status: 0 when all went well (for `check`, when every task
passed), 1 when a check found a failed task, 2 when the command could not do its work
(an unknown exercise, a folder that is not a workspace, a workspace that exists
already, tests that did not run, an unknown --lang) or when a file that judges the
exercise was changed.

`list`, `start`, `check`, `hint`, `solve` and `lab` speak English or Chinese (messages.py):
`--lang zh-CN`, else the language the workspace was started in, else Chinese where the
locale says so.  `check` says the tests' reasons in that language too (their table is
tests/exercises/reasons.toml); what the crawlers print stays as it is, and so do the
results formats.  The teachers' verbs (`handout`, `grade`) speak English.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from shared import reader_left
from shared.language import add_help_option, help_in
from shared.tools.exercises import (
    answers,
    checking,
    grading,
    handout,
    lab,
    reports,
    workspace,
)
from shared.tools.exercises.bodies import BodyError
from shared.tools.exercises.catalog import (
    ROOT,
    Exercise,
    ExerciseError,
    all_exercises,
    find,
    task_titles,
    tasks_in,
)
from shared.tools.exercises.messages import again, say
from shared.tools.language import LANGUAGES, display_width, locale_language, pad, wrap_columns

# How the README tells students to run this tool; a handout has no nox.
COMMAND = handout.TOOL if workspace.in_handout() else "nox -s exercise --"
SUMMARY_COLUMNS = 88  # `list` wraps each summary to this many columns, indented by 4
READABLE_COLUMNS = 100  # `check` wraps its lines to the terminal, but no wider than this


class Usage(Exception):
    """A request the tool cannot carry out: printed, exit status 2."""


def help_lang(argv: Sequence[str]) -> str:
    """The language of the help: the --lang among ``argv``, else the locale's, else English."""
    for index, arg in enumerate(argv):
        value = argv[index + 1] if arg == "--lang" and index + 1 < len(argv) else None
        value = arg.removeprefix("--lang=") if arg.startswith("--lang=") else value
        if value in LANGUAGES:
            return value
    return locale_language() or "en"


def add_lang(verb: argparse.ArgumentParser, said: str | None = None) -> None:
    """The verb's --lang: the language of the tool's own sentences (and of the instructions)."""
    verb.add_argument(
        "--lang",
        choices=LANGUAGES,
        help=said or "en or zh-CN (default: the workspace's, else zh-CN where the locale says so)",
    )


def speaking(given: str | None, folder: Path | None = None) -> str:
    """The language to speak: the one asked for, else the one the workspace in ``folder``
    was started in, else Chinese where the locale says so, else English."""
    kept = workspace.language(folder) if folder is not None else None
    return given or kept or locale_language() or "en"


def add_time_limits(verb: argparse.ArgumentParser, whole: str, lang: str) -> None:
    """Add --time-limit (per test) and --total-limit (for ``whole``) to a verb that checks."""
    limit = f"{checking.DEFAULT_TIME_LIMIT:g}"
    verb.add_argument(
        "--time-limit",
        type=float,
        default=checking.DEFAULT_TIME_LIMIT,
        metavar="S",
        help=f"每个测试最多用多少秒（{limit}）"
        if lang == "zh-CN"
        else f"seconds each test may take ({limit})",
    )
    verb.add_argument(
        "--total-limit",
        type=float,
        metavar="S",
        help=f"{whole}最多用多少秒（默认：10 个单测时限再加一分钟）"
        if lang == "zh-CN"
        else f"seconds {whole} may take (default: 10 time limits and a minute)",
    )


def parser(lang: str = "en") -> argparse.ArgumentParser:
    """The argument parser of every verb, its help in ``lang`` (the options are the same)."""

    def said(english: str, chinese: str) -> str:
        return chinese if lang == "zh-CN" else english

    def verb(name: str, english: str, chinese: str) -> argparse.ArgumentParser:
        words = said(english, chinese)
        made = verbs.add_parser(name, help=words, **help_in(lang, description=words))
        add_help_option(made, lang)
        return made

    top = argparse.ArgumentParser(
        prog="python -m shared.tools.exercises",
        **help_in(
            lang,
            description=said(
                "Rebuild the crawlers one idea at a time: exercises with tests per task.",
                "一次一个核心概念地重写爬虫：每个任务都有测试的练习。",
            ),
        ),
    )
    add_help_option(top, lang)
    top.add_argument(
        "--lang", dest="top_lang", choices=LANGUAGES, help=said("en or zh-CN", "en 或 zh-CN")
    )
    verbs = top.add_subparsers(dest="verb", metavar="VERB", title=said("verbs", "子命令"))
    in_help = said("the workspace (default: its usual folder)", "工作区（默认：它通常所在的目录）")
    lang_help = said(
        "en or zh-CN (default: the workspace's, else zh-CN where the locale says so)",
        "en 或 zh-CN（默认：工作区的语言；locale 是中文时为 zh-CN）",
    )
    listing = verb("list", "every exercise: stage, idea, summary", "每个练习：阶段、核心概念、简介")
    listing.add_argument(
        "--names", action="store_true", help=said("names only, one a line", "只列名称，一行一个")
    )
    add_lang(listing, lang_help)
    start = verb(
        "start",
        "make a workspace with the exercise's functions emptied",
        "建立工作区，练习的函数被清空",
    )
    start.add_argument("name", metavar="NAME")
    start.add_argument(
        "--into",
        type=Path,
        metavar="DIR",
        help=said("default: out/exercises/NAME", "默认：out/exercises/NAME"),
    )
    start.add_argument(
        "--force",
        action="store_true",
        help=said("replace an existing workspace", "替换已有的工作区（丢掉其中的内容）"),
    )
    add_lang(start, lang_help)
    check = verb(
        "check",
        "run the exercise's tests on the workspace, per task",
        "在工作区上运行练习的测试，每个任务一个结果",
    )
    check.add_argument("name", metavar="NAME")
    check.add_argument("--in", dest="folder", type=Path, metavar="DIR", help=in_help)
    add_time_limits(check, said("the whole check", "整个检查"), lang)
    check.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=said("show pytest's own output", "显示 pytest 自己的输出"),
    )
    check.add_argument(
        "--task",
        type=int,
        metavar="N",
        help=said("run task N's tests alone", "只运行任务 N 的测试"),
    )
    add_lang(check, lang_help)
    check.add_argument(
        "--format",
        action="append",
        choices=reports.FORMATS,
        help=said(
            "what --output receives (text); repeat both to write several formats at once",
            "--output 收到的格式（text）；两者成对重复，可以一次写出几种格式",
        ),
    )
    check.add_argument(
        "--output",
        action="append",
        type=Path,
        metavar="PATH",
        help=said("default: standard output", "默认：标准输出"),
    )
    hint = verb(
        "hint",
        "the next hint, one at a time, for the first task the last check failed",
        "上次检查中第一个未通过的任务的下一条提示，一次一条",
    )
    hint.add_argument("name", metavar="NAME")
    hint.add_argument("--in", dest="folder", type=Path, metavar="DIR", help=in_help)
    add_lang(hint, lang_help)
    solve = verb(
        "solve",
        "put the reference solution in, and show the diff",
        "放入参考答案，并显示差异",
    )
    solve.add_argument("name", metavar="NAME")
    solve.add_argument("--in", dest="folder", type=Path, metavar="DIR", help=in_help)
    solve.add_argument(
        "--task",
        type=int,
        metavar="N",
        help=said("only task N's reference", "只放入任务 N 的参考答案"),
    )
    add_lang(solve, lang_help)
    labs = verb(
        "lab",
        "the labs: make a lab's change, or take it back",
        "实验：做出一个实验的改动，或者撤销它",
    )
    labs.add_argument("action", choices=["list", "apply", "undo"])
    labs.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help=said("01, or 01-forget-task-done", "01，或 01-forget-task-done"),
    )
    add_lang(labs, lang_help)
    made = verb(
        "handout",
        "a workspace ready to publish as a student repository",
        "做成可以发布为学生仓库的工作区（作业包）",
    )
    made.add_argument("name", metavar="NAME")
    made.add_argument(
        "dir", type=Path, metavar="DIR", help=said("a new or empty folder", "一个新的或空的目录")
    )
    made.add_argument(
        "--lang",
        choices=LANGUAGES,
        help=said(
            "the language the handout's tool speaks (default: each student's locale)",
            "作业包里的工具说哪种语言（默认：每个学生的 locale）",
        ),
    )
    grade = verb(
        "grade",
        "re-grade student folders with the repository's tests",
        "用仓库的测试重新评判学生的目录",
    )
    grade.add_argument("name", metavar="NAME")
    grade.add_argument("dirs", type=Path, nargs="+", metavar="DIR")
    grade.add_argument(
        "--csv",
        type=Path,
        metavar="PATH",
        help=said("write the table as CSV too", "同时把这张表写成 CSV"),
    )
    grade.add_argument(
        "--diff",
        action="store_true",
        help=said(
            "after the table, what each student wrote: a diff of each body from the handout's",
            "在表格之后显示每个学生写了什么：每个函数体与作业包中的差异",
        ),
    )
    add_time_limits(grade, said("each student's check", "每个学生的检查"), lang)
    return top


def do_lab(action: str, name: str | None, lang: str = "en") -> int:
    """`lab list`, `lab apply NAME`, `lab undo NAME`: what changed, and what to run next."""
    if action == "list":
        for guide in lab.guides():
            print(f"{guide.stem:<32}{', '.join(lab.read_lab(guide).files())}")
        return 0
    if name is None:
        raise Usage(say(lang, "lab.which", command=COMMAND, action=action))
    chosen = lab.find_lab(name)
    if action == "apply":
        for path in lab.apply(chosen):
            did = "lab.wrote" if chosen.diff is None else "lab.changed"
            print(say(lang, did, name=chosen.name, path=path))
        # The guide to read in the reader's language: NN-name.zh-CN.md beside NN-name.md.
        guide = chosen.guide.with_suffix(f".{lang}.md") if lang != "en" else chosen.guide
        guide = guide if guide.is_file() else chosen.guide
        undo = f"{COMMAND} lab undo {name}"
        print(say(lang, "lab.next", guide=f"labs/{guide.name}", command=undo))
        return 0
    for path in lab.undo(chosen):
        did = "lab.removed" if chosen.diff is None else "lab.restored"
        print(say(lang, did, name=chosen.name, path=path))
    return 0


def show_list(names_only: bool, lang: str = "en") -> None:
    """Print every exercise in the chapter's order: its idea and summary in ``lang``."""
    exercises = all_exercises()
    if names_only:
        for exercise in exercises:
            print(exercise.name)
        return
    if not exercises:
        print(say(lang, "list.none"))
        return
    # Padded and wrapped by display width: a Chinese character takes two columns.
    width = max(display_width(e.name) for e in exercises) + 2
    stage_width = max(display_width(e.stage) for e in exercises) + 2
    for exercise in exercises:
        print(pad(exercise.name, width) + pad(exercise.stage, stage_width) + exercise.idea_in(lang))
        for line in wrap_columns(exercise.summary_in(lang), SUMMARY_COLUMNS):
            print(" " * 4 + line)
    start = f"{COMMAND} start NAME" + (f" --lang {lang}" if lang != "en" else "")
    print("\n" + say(lang, "list.start", command=start))


def exercise_named(name: str) -> Exercise:
    """The exercise, or Usage listing the ones there are."""
    exercise = find(name)
    if exercise is None:
        names = ", ".join(e.name for e in all_exercises()) or "none yet"
        raise Usage(say("en", "error.no-exercise", name=repr(name), names=names))
    return exercise


def folder_of(name: str, given: Path | None) -> tuple[Path, str]:
    """The workspace folder, and the command that starts it there."""
    if given is None:
        return workspace.default_workspace(name), f"{COMMAND} start {name}"
    return given.resolve(), f"{COMMAND} start {name} --into {given}"


def do_start(exercise: Exercise, into: Path | None, force: bool, lang: str = "en") -> int:
    """`start`: make the workspace, its instructions in ``lang``, and say what to do next."""
    folder, _ = folder_of(exercise.name, into)
    folder = workspace.start(exercise, folder, force=force, lang=lang)
    where = "" if into is None else f" --in {into}"
    print(say(lang, "start.made", name=exercise.name, folder=folder))
    print(say(lang, "start.emptied"))
    for target in exercise.replace:
        print(f"  {target}")
    check = f"{COMMAND} check {exercise.name}{where}"
    print(say(lang, "start.next", instructions=folder / "INSTRUCTIONS.md", command=check))
    return 0


def screen_columns() -> int | None:
    """The columns `check` wraps its lines to: the terminal's, at most READABLE_COLUMNS; None
    (a line per task, as long as it is) when the output goes to a file or a program."""
    if not sys.stdout.isatty():
        return None
    return max(40, min(READABLE_COLUMNS, shutil.get_terminal_size().columns))


def do_check(exercise: Exercise, args: argparse.Namespace) -> int:
    """`check`: one line per task; 0 when every task passed, 2 when the tests were changed."""
    outputs: list[Path] = args.output or []
    forms: list[str] = args.format or ["text"] * max(1, len(outputs))
    if len(forms) != max(1, len(outputs)):
        raise Usage(say("en", "error.formats"))
    folder, how = folder_of(exercise.name, args.folder)
    workspace.require_workspace(exercise, folder, how)
    lang = speaking(args.lang, folder)
    # From the repository, its files judge; in a handout, the manifest vouches for its own.
    pristine = None if workspace.in_handout() else ROOT
    tampered = grading.tampering(exercise, folder, pristine)
    if tampered and pristine is None:  # the test module may be the one changed: ask the README
        tasks = sorted(task_titles(exercise.instructions.read_text(encoding="utf-8")))
    else:
        tasks = tasks_in(((pristine or folder) / exercise.tests).read_text(encoding="utf-8"))
    if args.task is not None and args.task not in tasks:
        raise Usage(say("en", "error.no-task", name=exercise.name, task=args.task, tasks=tasks))
    if tampered:
        result = checking.not_judged([args.task] if args.task else tasks, tampered)
    else:
        result = checking.run_check(
            exercise,
            folder,
            args.time_limit,
            args.total_limit,
            verbose=args.verbose,
            pristine=pristine,
            only_task=args.task,
        )
    if result.ran and not tampered:  # for `hint`: the first task that fails
        verdicts = {task.number: task.passed for task in result.tasks}
        workspace.remember_verdicts(exercise, folder, verdicts)
    # The screen hears the reader's language; a file, whatever its format, a program reads.
    columns = screen_columns()
    if outputs:
        print(reports.as_text(exercise, result, lang, columns), end="")
        for form, path in zip(forms, outputs, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(reports.render(form, exercise, result), encoding="utf-8")
    else:
        print(reports.render(forms[0], exercise, result, lang, columns), end="")
    on_screen = bool(outputs) or forms == ["text"]  # the text, not a format
    if not result.passed and result.ran and not args.verbose and on_screen:
        # The same check again, on the same folder and task, with pytest's own report.
        where = "" if args.folder is None else f" --in {args.folder}"
        task = "" if args.task is None else f" --task {args.task}"
        verbose = f"{COMMAND} check {exercise.name}{where}{task} --verbose"
        print(say(lang, "check.verbose", command=verbose))
    if tampered or not result.ran:
        return 2
    return 0 if result.passed else 1


def do_handout(exercise: Exercise, folder: Path, lang: str | None = None) -> int:
    """`handout`: the workspace as a repository for students, with its workflow."""
    if workspace.in_handout():
        raise Usage("make handouts from the repository: a handout cannot make another")
    made = handout.make(exercise, folder, lang)
    print(f"handout of {exercise.name}: {made}")
    print(f"publish it as the assignment's template repository; its workflow: {handout.WORKFLOW}")
    return 0


def do_grade(exercise: Exercise, args: argparse.Namespace) -> int:
    """`grade`: every folder judged with the repository's tests; one table, maybe a CSV."""
    if workspace.in_handout():
        raise Usage("grade from the repository: its tests are the ones that judge")
    total = args.total_limit or checking.default_total_limit(args.time_limit)
    rows, diffs = [], []
    csv = None if args.csv is None else args.csv.resolve()
    here = Path.cwd()
    print(grading.layers(), file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="exercise-grade-") as scratch:
        teacher = grading.Teacher(exercise, Path(scratch))
        # The checks' parent works outside the clone: no process of theirs has it one
        # step away (the folders are named as given, found from where grade started).
        os.chdir(scratch)
        try:
            for folder in args.dirs:
                where = here / folder
                rows.append(grading.grade_one(exercise, where, args.time_limit, total, teacher))
                rows[-1].folder = str(folder)
                print(f"graded {folder}: {rows[-1].total} of {rows[-1].most}", file=sys.stderr)
                if args.diff and workspace.read_marker(where.resolve()) is not None:
                    diffs.append(grading.bodies_diff(exercise, where, teacher, str(folder)))
        finally:
            os.chdir(here)
    print(grading.table(exercise, rows), end="")
    for diff in diffs:
        print("\n" + diff, end="")
    if csv is not None:
        csv.parent.mkdir(parents=True, exist_ok=True)
        csv.write_text(grading.as_csv(exercise, rows), encoding="utf-8", errors="backslashreplace")
    return 0


def do_hint(exercise: Exercise, given: str | None = None, where: Path | None = None) -> int:
    """`hint`: the next hint of the first task that failed at the workspace's last check (in
    their order before any check), in the workspace's language or the one asked for; after
    the last one, all of them.  A hint is shown once, whatever the language."""
    folder = workspace.default_workspace(exercise.name) if where is None else where.resolve()
    lang = speaking(given, folder)
    hints = exercise.hints_in(lang) or exercise.hints  # untranslated yet: the English ones
    if not hints:
        print(say(lang, "hint.none", name=exercise.name))
        return 0
    verdicts = workspace.last_verdicts(exercise, folder)
    failing = sorted(task for task, passed in verdicts.items() if not passed)
    if verdicts and not failing and set(exercise.hint_tasks) <= set(verdicts):
        print(say(lang, "hint.all-passed", name=exercise.name))
        return 0
    first = failing[0] if failing else None
    # The first failing task's hints first, then the others, each group in its order.
    order = sorted(range(len(hints)), key=lambda n: (exercise.hint_tasks[n] != first, n))
    seen = workspace.hints_seen(exercise, folder)
    unseen = [n for n in order if n not in seen]
    if unseen:
        number = unseen[0]
        print(say(lang, "hint.one", number=number + 1, total=len(hints), text=hints[number]))
        workspace.see_hint(exercise, number, folder)
        return 0
    print(say(lang, "hint.no-more", name=exercise.name, total=len(hints)))
    for number, text in enumerate(hints, 1):
        print(say(lang, "hint.each", number=number, text=text))
    return 0


def do_solve(
    exercise: Exercise, given: Path | None, task: int | None = None, lang: str | None = None
) -> int:
    """`solve`: the reference bodies in (all, or task ``task``'s), the diff out, said in the
    reader's language (``lang``, else the workspace's, else the locale's)."""
    if workspace.in_handout():
        raise Usage("the reference solution is not in a handout: solve from the repository")
    folder, how = folder_of(exercise.name, given)
    workspace.require_workspace(exercise, folder, how)
    tasks = answers.load(exercise).tasks
    if task is not None and task not in tasks:
        numbers = ", ".join(map(str, tasks))
        raise Usage(say("en", "error.no-task", name=exercise.name, task=task, tasks=numbers))
    said = speaking(lang, folder)
    diff, notes = workspace.solve(exercise, folder, task)
    for note in notes:
        print(say(said, "solve.note", note=note))
    if not diff:
        print(say(said, "solve.nothing", folder=folder))
        return 0
    print(diff, end="")
    print("\n" + say(said, "solve.done", folder=folder, backup=workspace.BACKUP))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb; return the exit status."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = parser(help_lang(arguments)).parse_args(arguments)
    if getattr(args, "lang", None) is None:  # `--lang zh-CN VERB ...`: before the verb
        args.lang = args.top_lang
    try:
        status = run(args)
        sys.stdout.flush()
    except BrokenPipeError:  # our reader left (`| head`): stop quietly
        return reader_left()
    return status


def run(args: argparse.Namespace) -> int:
    """Carry out the verb the arguments name; return the exit status."""
    try:
        if args.verb in (None, "list"):
            show_list(getattr(args, "names", False), speaking(getattr(args, "lang", None)))
            return 0
        if args.verb == "lab":
            return do_lab(args.action, args.name, speaking(args.lang))
        exercise = exercise_named(args.name)
        if args.verb == "start":
            return do_start(exercise, args.into, args.force, speaking(args.lang))
        if args.verb == "check":
            return do_check(exercise, args)
        if args.verb == "hint":
            return do_hint(exercise, args.lang, args.folder)
        if args.verb == "handout":
            return do_handout(exercise, args.dir, args.lang)
        if args.verb == "grade":
            return do_grade(exercise, args)
        return do_solve(exercise, args.folder, args.task, args.lang)
    except Usage as error:
        lang = speaking(getattr(args, "lang", None))
        print(again(str(error), lang), file=sys.stderr)
        show_list(False, lang)
        return 2
    except (workspace.WorkspaceError, ExerciseError, BodyError, SyntaxError, lab.LabError) as error:
        print(again(str(error), speaking(getattr(args, "lang", None))), file=sys.stderr)
        return 2
