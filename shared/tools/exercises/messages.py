"""What the exercise tool itself says to a student, in each language it speaks.

`say(lang, key, **fields)` gives one sentence.  Only the tool's own sentences are here:
what the tests and the crawlers print is data, and stays as it is.  Whatever a program
reads (the results formats of `check --format`, the exit status) is the same in every
language: the results keep each sentence in English, as `say("en", ...)` wrote it, and
`again(text, lang)` says such a sentence anew when it is printed for a reader.  It says
the tests' sentences again too: a test fails with an English sentence of its own table,
tests/exercises/reasons.toml, which has each one in every language (`TESTS`).  The
plugin that bounds each test (tests/exercises/conftest.py) cannot import this tool, so
its sentences about the limits are written there again; a test holds the two equal.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

SENTENCES: dict[str, dict[str, str]] = {
    "en": {
        # list
        "list.none": "no exercises yet",
        "list.start": "start one with: {command}",
        # start
        "start.made": "workspace for {name}: {folder}",
        "start.emptied": "emptied, for you to write again:",
        "start.next": "read {instructions}, then: {command}",
        # hint
        "hint.none": "{name} has no hints: INSTRUCTIONS.md is all there is",
        "hint.one": "hint {number} of {total}: {text}",
        "hint.no-more": "no more hints for {name}; here are all {total}:",
        "hint.each": "hint {number}: {text}",
        "hint.all-passed": "every task of {name} passed at the last check: no hint needed",
        # solve
        "solve.note": "note: {note}",
        "solve.nothing": "{folder} already has the reference solution: nothing changed",
        "solve.done": "the reference solution is in {folder}; what was there is in {backup}/",
        # what an emptied function raises (in the student's file, so kept in English)
        "stub.write": "exercise {name}: write {function} (see INSTRUCTIONS.md)",
        # check: a line per task, the files changed, the problems, the score
        "task.passed": "task {number}: passed",
        "task.failed": "task {number}: FAILED - {reason}",
        "task.failed-of": "task {number}: FAILED - {reason} ({failed} of {tests} tests failed)",
        "check.tampered": "tampered: {entry}",
        "check.problem": "problem: {problem}",
        "check.score": "{name}: {done} of {tasks} tasks passed, {points} of {most} points",
        "check.verbose": "(each test's own report: {command})",
        # why a task failed, when the tool says so rather than a test
        "reason.not-judged": (
            "not judged: files that judge the exercise were changed (see `tampered`)"
        ),
        "reason.code-refused": (
            "not judged: your file does more than the exercise allows (see `tampered`: "
            "the line, and why)"
        ),
        "reason.not-run-because": "not run: {why}",
        "reason.not-run": "not run",
        "reason.skipped": "skipped: {reason}",
        "reason.no-test": "no test of this task ran",
        "reason.not-loaded": "the tests could not be loaded: {error}",
        # the limits: the whole check's (checking.py) and each test's (the plugin's)
        "limit.whole": "the whole check was stopped after {seconds} s",
        "limit.test": "took longer than {seconds} s: an endless loop, or a wait nothing ends?",
        "limit.caught": (
            "went on after its {seconds} s were up: an `except BaseException` (or a bare "
            "`except:`) caught the stop; catch Exception, and let the rest through"
        ),
        "limit.task-timed-out": "a test of task {task} already {limit}",
        "limit.task-failed": "a test of task {task} failed already",
        # a file that judges the exercise, and what was done to it
        "file.changed": "{path} (changed)",
        "file.removed": "{path} (removed)",
        "file.added": "{path} (added)",
        "file.no-outline": "{path} (no outline of the files you write)",
        "file.no-manifest": "{path} (missing or unreadable)",
        "file.not-plain": "{path} ({why}: a teacher reads plain files only)",
        "file.not-utf8": "{path} (not UTF-8 at byte {offset}: save it as UTF-8)",
        "file.encoding": (
            "{path} (declares the coding {encoding}: Python would run other text than the "
            "check reads; save it as UTF-8 and remove the declaration)"
        ),
        "file.too-deep": "{path} (nested too deeply to be read: write it flatter)",
        "file.misread": (
            "{path} (holds {character}, which a reader and Python read differently: remove it)"
        ),
        # what went wrong outside the tasks
        "problem.unmarked": "tests without @pytest.mark.task(taskno=N): {tests}",
        "problem.never-imported": "the tests never imported {module}, which the exercise empties",
        "problem.elsewhere": "{module} was imported from {file}, not from the workspace",
        "problem.no-proof": "no record of where the code under test was imported from",
        "results.unsigned": "results: {count} record(s) the check did not write",
        "code.outside": "{path}:{line}: {what} (only the emptied bodies are yours)",
        "code.removed": "{path}: {what} removed (only the emptied bodies are yours)",
        "code.body": "{path}:{line}: {what} in {function}: {why}",
        "code.why-blocks": (
            "a call to {name} waits on the loop's only thread, and every other fetch stops "
            "with it: schedule the rest instead (call_later in stage 1, a Future the loop "
            "resolves in stage 2, await in stage 3)"
        ),
        "code.why-import": (
            "an import runs code outside the exercise; use what the module imports already"
        ),
        "code.why-global": "a body keeps its state on self or in locals, not in the module",
        "code.why-interpreter": "it reaches into the interpreter, past the code under test",
        "code.why-past": (
            "it reaches past the crawl, to threads, processes or files: the lesson's loop "
            "does all its work on its one thread, and the tests judge only that"
        ),
        "code.why-unneeded": (
            "no solution of this exercise needs it; write the body with the module's own names"
        ),
        "results.twice": "results: {what} reported twice",
        "results.unknown": "results: {test} is not a test of the exercise",
        "reason.missing": "{test} did not run",
        "reason.forged": "not judged: the results were tampered with (see tampered)",
        "problem.pytest": "pytest said: {tail}",
        "problem.not-graded": "could not be graded: {error}",
        # lab
        "lab.which": "which lab? {command} lab {action} NAME (see {command} lab list)",
        "lab.wrote": "lab {name}: wrote {path}",
        "lab.changed": "lab {name}: changed {path}",
        "lab.removed": "lab {name}: removed {path}",
        "lab.restored": "lab {name}: restored {path}",
        "lab.next": "predict first ({guide}), run, then: {command}",
        # what stops a verb a student runs (exit status 2)
        "error.no-exercise": "no exercise named {name}; the exercises: {names}",
        "error.no-task": "{name} has no task {task}; its tasks: {tasks}",
        "error.not-a-workspace": "{folder} is not a workspace: run `{command}` first",
        "error.other-workspace": (
            "{folder} is the workspace of {other}, not of {name}: run `{command}` first"
        ),
        "error.exists": (
            "{folder} is already a workspace: check it, or start again with --force "
            "(which throws away what is in it)"
        ),
        "error.not-empty": "{folder} exists and is not a workspace: choose a new or empty folder",
        "error.formats": (
            "give one --format for each --output (or a single --format, for the screen)"
        ),
        # what stops `lab apply` and `lab undo` (lab.py's LabError): the code is not as the
        # guide's diff expects, or the guide itself is not one the tool can read
        "error.no-lab": "no lab named {name}; the labs: {names}",
        "error.lab-applied": "lab {name} is applied already to {path}",
        "error.lab-not-applied": "lab {name} is not applied to {path}",
        "error.hunk-nowhere": (
            "{path}: the guide's hunk in {where} matches no place in the code: update the guide"
        ),
        "error.hunk-many": (
            "{path}: the guide's hunk in {where} matches {count} places in the code: "
            "give it more of the lines around the change"
        ),
        "error.hunk-edges": "{hunk}: a hunk starts and ends with a line it keeps, to say where",
        "error.hunk-line": "not a line of a hunk: {line}",
        "error.no-break": "{guide}: its Break it section has neither a diff nor a script",
    },
    "zh-CN": {
        "list.none": "还没有练习",
        "list.start": "开始一个练习：{command}",
        "start.made": "{name} 的工作区：{folder}",
        "start.emptied": "已清空、等你重写的函数：",
        "start.next": "先读 {instructions}，然后运行：{command}",
        "hint.none": "{name} 没有提示：INSTRUCTIONS.md 就是全部说明",
        "hint.one": "提示 {number}/{total}：{text}",
        "hint.no-more": "{name} 没有更多提示了；下面是全部 {total} 条：",
        "hint.each": "提示 {number}：{text}",
        "hint.all-passed": "上次检查时 {name} 的每个任务都通过了：不需要提示",
        "solve.note": "注意：{note}",
        "solve.nothing": "{folder} 里已经是参考答案：什么也没有改",
        "solve.done": "参考答案已放进 {folder}；原来的内容保存在 {backup}/ 中",
        "stub.write": "练习 {name}：写出 {function}（见 INSTRUCTIONS.md）",
        "task.passed": "任务 {number}：通过",
        "task.failed": "任务 {number}：未通过 - {reason}",
        "task.failed-of": (
            "任务 {number}：未通过 - {reason}（{tests} 个测试中有 {failed} 个未通过）"
        ),
        "check.tampered": "被改动的评判文件：{entry}",
        "check.problem": "问题：{problem}",
        "check.score": "{name}：{tasks} 个任务中通过了 {done} 个，得分 {points}/{most}",
        "check.verbose": "（查看每个测试的详细报告：{command}）",
        "reason.not-judged": "未评判：评判练习的文件被改动了（见“被改动的评判文件”）",
        "reason.code-refused": (
            "未评判：你的文件做了练习不允许的事（见“被改动的评判文件”：哪一行，为什么）"
        ),
        "reason.not-run-because": "未运行：{why}",
        "reason.not-run": "未运行",
        "reason.skipped": "跳过：{reason}",
        "reason.no-test": "这个任务没有一个测试运行过",
        "reason.not-loaded": "无法加载测试：{error}",
        "limit.whole": "整个检查在 {seconds} 秒后被停止",
        "limit.test": "用时超过 {seconds} 秒：是死循环，还是一个永远不会结束的等待？",
        "limit.caught": (
            "{seconds} 秒用完后仍在运行：一个 `except BaseException`（或不带类型的 "
            "`except:`）接住了停止信号；请只捕获 Exception，其余的让它传出去"
        ),
        "limit.task-timed-out": "任务 {task} 的一个测试已经{limit}",
        "limit.task-failed": "任务 {task} 已有一个测试未通过",
        "file.changed": "{path}（被修改）",
        "file.removed": "{path}（被删除）",
        "file.added": "{path}（被新增）",
        "file.no-outline": "{path}（没有你所写文件的大纲）",
        "file.no-manifest": "{path}（缺失或无法读取）",
        "file.not-plain": "{path}（{why}：老师只读取普通文件）",
        "file.not-utf8": "{path}（第 {offset} 字节起不是 UTF-8：请把它存为 UTF-8）",
        "file.encoding": (
            "{path}（声明了编码 {encoding}：Python 运行的文本会和检查读到的不同；"
            "请存为 UTF-8 并删去这行声明）"
        ),
        "file.too-deep": "{path}（嵌套太深，无法读取：请写得平一些）",
        "file.misread": "{path}（含有 {character}，读者和 Python 对它的理解不同：请删掉它）",
        "problem.unmarked": "没有 @pytest.mark.task(taskno=N) 标记的测试：{tests}",
        "problem.never-imported": "测试从未导入 {module}，而练习清空的正是它",
        "problem.elsewhere": "{module} 是从 {file} 导入的，不是从工作区",
        "problem.no-proof": "没有记录被测代码是从哪里导入的",
        "results.unsigned": "结果：有 {count} 条记录不是检查写下的",
        "code.outside": "{path}:{line}：{what}（只有被清空的函数体是你写的）",
        "code.removed": "{path}：{what} 被删除了（只有被清空的函数体是你写的）",
        "code.body": "{path}:{line}：{function} 中的 {what}：{why}",
        "code.why-blocks": (
            "调用 {name} 会在事件循环唯一的线程上等待，其他所有抓取都随之停下：请改为安排"
            "后续的工作（阶段 1 用 call_later，阶段 2 用由事件循环设置结果的 Future，"
            "阶段 3 用 await）"
        ),
        "code.why-import": "import 会运行练习之外的代码；请使用模块已经导入的名字",
        "code.why-global": "函数体把状态保存在 self 或局部变量里，而不是模块里",
        "code.why-interpreter": "它越过了被测代码，伸进了解释器内部",
        "code.why-past": (
            "它越过了爬虫，伸向线程、进程或文件：本课的事件循环在它唯一的线程上完成全部工作，"
            "测试也只评判这些"
        ),
        "code.why-unneeded": "这个练习的任何解答都用不到它；请用模块自己的名字写出函数体",
        "results.twice": "结果：{what} 被报告了两次",
        "results.unknown": "结果：{test} 不是这个练习的测试",
        "reason.missing": "{test} 没有运行",
        "reason.forged": "未评判：结果被篡改了（见“被改动的评判文件”）",
        "problem.pytest": "pytest 说：{tail}",
        "problem.not-graded": "无法评分：{error}",
        "lab.which": "哪个实验？{command} lab {action} NAME（见 {command} lab list）",
        "lab.wrote": "实验 {name}：写入了 {path}",
        "lab.changed": "实验 {name}：修改了 {path}",
        "lab.removed": "实验 {name}：删除了 {path}",
        "lab.restored": "实验 {name}：还原了 {path}",
        "lab.next": "先预测（{guide}），再运行；做完后撤销：{command}",
        "error.no-exercise": "没有名为 {name} 的练习；现有的练习：{names}",
        "error.no-task": "{name} 没有任务 {task}；它的任务：{tasks}",
        "error.not-a-workspace": "{folder} 不是工作区：先运行 `{command}`",
        "error.other-workspace": "{folder} 是 {other} 的工作区，不是 {name} 的：先运行 `{command}`",
        "error.exists": (
            "{folder} 已经是一个工作区：检查它，或者加 --force 重新开始（会丢掉其中的内容）"
        ),
        "error.not-empty": "{folder} 已经存在，而且不是工作区：请选择一个新的或空的目录",
        "error.formats": "每个 --output 要有一个 --format（或者只给一个 --format，输出到屏幕）",
        "error.no-lab": "没有名为 {name} 的实验；现有的实验：{names}",
        "error.lab-applied": "实验 {name} 已经应用到 {path} 上了",
        "error.lab-not-applied": "实验 {name} 没有应用到 {path} 上",
        "error.hunk-nowhere": (
            "{path}：实验指南中 {where} 的 hunk 在代码中找不到相符之处：请更新实验指南"
        ),
        "error.hunk-many": (
            "{path}：实验指南中 {where} 的 hunk 在代码中有 {count} 处相符："
            "请让它多带几行改动前后的代码"
        ),
        "error.hunk-edges": "{hunk}：hunk 要以一行不变的代码开始和结束，由它们说明改在哪里",
        "error.hunk-line": "不是 hunk 中的一行：{line}",
        "error.no-break": "{guide}：它的“破坏它”一节既没有 diff，也没有脚本",
    },
}

#: The sentences a result or an error keeps in English (why a task failed, which file
#: was changed, what went wrong): `again` says them in the reader's language.
KEPT = ("reason.", "limit.", "file.", "problem.", "error.", "results.", "code.", "stub.")
FIELD = re.compile(r"\{(\w+)\}")
#: The tests' own sentences: the repository's copy, or in a handout the handout's.
TESTS = Path(__file__).resolve().parents[3] / "tests" / "exercises" / "reasons.toml"
#: What a failure names before its sentence: an exception's class ("AssertionError: ").
RAISED = re.compile(r"((?:[a-z_]\w*\.)*[A-Z]\w*: )(.*)", re.DOTALL)


def say(lang: str, key: str, **fields: object) -> str:
    """The sentence ``key`` in ``lang``, its blanks filled."""
    return SENTENCES[lang][key].format(**fields)


@cache
def tests_sentences() -> dict[str, dict[str, str]]:
    """The tests' sentences by language, as SENTENCES has the tool's ({} without the file)."""
    try:
        with TESTS.open("rb") as file:
            table = tomllib.load(file)
    except OSError:
        return {}
    by_lang: dict[str, dict[str, str]] = {}
    for key, said in table.items():
        for lang, text in said.items():
            by_lang.setdefault(lang, {})[key] = text
    return by_lang


@cache
def _templates() -> list[tuple[str, str, str]]:
    """Every English sentence `again` says anew, as (table, key, template): the tool's kept
    ones and the tests', the most words first, so that "{why}: ..." is tried last."""
    found = [("tool", k, t) for k, t in SENTENCES["en"].items() if k.startswith(KEPT)]
    found += [("tests", k, t) for k, t in tests_sentences().get("en", {}).items()]
    return sorted(found, key=lambda entry: -len(FIELD.sub("", entry[2])))


def _said(table: str, lang: str, key: str, fields: dict[str, str]) -> str:
    """A template of ``table`` in ``lang``, its blanks filled."""
    sentences = SENTENCES if table == "tool" else tests_sentences()
    return sentences[lang][key].format(**fields)


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """A regular expression that matches what the English template says: its blanks, groups."""
    pieces = FIELD.split(template)  # text, name, text, name, ..., text
    parts, named = [], set()
    for index, piece in enumerate(pieces):
        if index % 2 == 0:
            parts.append(re.escape(piece))
        else:  # a blank the sentence fills twice holds the same text twice
            parts.append(f"(?P={piece})" if piece in named else f"(?P<{piece}>.+?)")
            named.add(piece)
    return re.compile("".join(parts), re.DOTALL)


def again(text: str, lang: str) -> str:
    """A sentence of the tool's, kept in English, said in ``lang``; any other text as it is.

    Its blanks are said again too: "not run: the whole check was stopped after 9 s" is one
    sentence inside another.  A test's sentence may follow the class of what it raised
    ("AssertionError: ..."), which stays.  Text no table has (what Python or the code
    under test said) stays as it is.
    """
    if lang == "en":
        return text
    raised = RAISED.fullmatch(text)  # a test's sentence, or an emptied function's
    if raised and (said := _again(raised[2], lang, tables=("tests", "stub"))) is not None:
        return raised[1] + said
    said = _again(text, lang, tables=("tool", "tests", "stub"))
    return text if said is None else said


def _again(text: str, lang: str, tables: tuple[str, ...]) -> str | None:
    """``text`` said in ``lang`` by the first template of ``tables`` it is, or None."""
    for table, key, template in _templates():
        kind = "stub" if key.startswith("stub.") else table
        if kind in tables and (match := _pattern(template).fullmatch(text)):
            fields = {name: again(value, lang) for name, value in match.groupdict().items()}
            return _said(table, lang, key, fields)
    return None
