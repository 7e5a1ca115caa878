"""The exercise tool in Chinese (shared/tools/exercises/, messages.py, shared/tools/language.py).

- `list --lang zh-CN` gives each exercise's idea and summary in Chinese (exercise.toml's
  `idea-zh-CN`, `summary-zh-CN`), its columns aligned and its lines wrapped by display width.
- `start --lang zh-CN` writes the Chinese instructions into the workspace, and the
  locale chooses Chinese when no --lang does; the workspace remembers its language.
- Every exercise has as many Chinese hints as English ones, with the code kept as it is;
  `hint` prints them.
- `check` says its own sentences in Chinese (task passed or failed, the limits, changed
  files, the score); what a program reads, the results formats and the exit status,
  is the same in either language; the command it suggests for pytest's own report is the
  same check, on the same folder (`--in DIR`) and task.
- `lab apply` names the Chinese guide, and the lab commands' own errors (a lab applied
  already, a guide's hunk that no longer fits the code) are said in Chinese too; an
  unknown --lang is an error, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared.tools.exercises import catalog, cli, messages, workspace
from shared.tools.exercises.cli import main
from shared.tools.exercises.messages import KEPT, SENTENCES, again, say
from shared.tools.language import CLOSING, LANGUAGES, display_width, pad, wrap_columns

pytestmark = pytest.mark.usefixtures("english_tool")  # the tool's sentences, in English

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted(path.parent.name for path in catalog.EXERCISES.glob("*/exercise.toml"))
CJK = re.compile(r"[\u4e00-\u9fff]")
#: What a hint names from the code: dotted names and snake_case ones, never translated.
CODE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z]\w*_\w+")
PACKAGES = ("shared", "stage1_callbacks", "stage2_generators", "stage3_asyncio")
#: Ideas the glossary (shared/GLOSSARY.md) keeps in English on the Chinese pages too.
KEPT_TERMS = ("Future", "continuation")
#: What a summary names from the command line: --max-tasks, --delay, never translated.
OPTION = re.compile(r"--[a-z][\w-]*")


# --- list -------------------------------------------------------------------------------


def summary_falls_behind(name: str) -> list[str]:
    """How an exercise's Chinese idea and summary (exercise.toml) fall behind the English."""
    exercise = catalog.named(name)
    if "zh-CN" not in [lang for lang, _, _ in exercise.translated_lines]:
        return ["exercise.toml has no `idea-zh-CN` and `summary-zh-CN`: `list` shows English"]
    idea, summary = exercise.idea_in("zh-CN"), exercise.summary_in("zh-CN")
    wrong = []
    if not (CJK.search(idea) or idea in KEPT_TERMS):
        wrong.append("`idea-zh-CN` is not Chinese")
    if not CJK.search(summary):
        wrong.append("`summary-zh-CN` is not Chinese")
    code = CODE.findall(exercise.summary) + OPTION.findall(exercise.summary)
    if missing := [word for word in code if word not in summary]:
        wrong.append(f"the Chinese summary lacks the code {missing}")
    return wrong


def test_text_is_padded_and_wrapped_by_the_columns_a_terminal_gives_it() -> None:
    assert display_width("事件循环 loop") == 13 and pad("协程", 6) == "协程  "
    assert wrap_columns("one two three", 8) == ["one two", "three"]  # English: at spaces
    # Chinese: between any two characters, but never a line that starts with "，"
    assert wrap_columns("一二三四五六七八九，十", 18) == ["一二三四五六七八", "九，十"]
    assert wrap_columns("用 select() 等待", 10) == ["用", "select()", "等待"]
    for text in ("写出阶段 1 事件循环的一轮：在 select() 中等待，", "a " * 30):
        for columns in range(2, 30):
            lines = wrap_columns(text, columns)
            assert all(display_width(line) <= columns for line in lines), (text, columns)
            assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_list_in_chinese_gives_the_chinese_ideas_and_summaries_aligned_by_display_width(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exercises = catalog.all_exercises()
    assert main(["list", "--lang", "zh-CN"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line and not line.startswith(" ")]
    assert heads[-1] == "开始一个练习：nox -s exercise -- start NAME --lang zh-CN"
    rows = heads[:-1]
    assert [row.split()[0] for row in rows] == [e.name for e in exercises]
    for row, exercise in zip(rows, exercises, strict=True):
        idea = exercise.idea_in("zh-CN")
        assert row.endswith(idea), row
        # every idea starts in the same terminal column, whatever its name and stage hold
        assert display_width(row) - display_width(idea) == display_width(rows[0]) - display_width(
            exercises[0].idea_in("zh-CN")
        ), row
    summaries = "\n".join(lines)
    for exercise in exercises:  # each summary whole once its lines are joined again
        assert exercise.summary_in("zh-CN").replace(" ", "") in summaries.replace(
            "\n    ", ""
        ).replace(" ", ""), exercise.name
    too_wide = [line for line in lines if display_width(line) > 4 + 88]
    assert not too_wide, f"wrapped by characters, not columns: {too_wide}"
    wrapped = [line.strip() for line in lines if line.startswith("    ")]
    assert not [line for line in wrapped if line[0] in CLOSING], "a line starts with ，or 。"
    assert exercises[0].summary not in summaries  # no English left

    monkeypatch.setenv("LANG", "zh_CN.UTF-8")  # the locale chooses, --lang wins
    assert main(["list"]) == 0
    assert capsys.readouterr().out.splitlines() == lines
    assert main(["list", "--lang", "en"]) == 0
    english = capsys.readouterr().out
    assert exercises[0].idea in english and "start one with: " in english


# --- start ------------------------------------------------------------------------------


def test_start_in_chinese_writes_the_chinese_instructions_and_says_so_in_chinese(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s1-connect")
    folder = tmp_path / "ws"
    assert main(["start", "s1-connect", "--lang", "zh-CN", "--into", str(folder)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("s1-connect 的工作区：") and "先读 " in said
    assert "nox -s exercise -- check s1-connect --in " in said  # the command, untranslated
    written = (folder / "INSTRUCTIONS.md").read_text(encoding="utf-8")
    chinese = exercise.instructions_in("zh-CN").read_text(encoding="utf-8")
    assert written == workspace.instructions(exercise, "zh-CN") != chinese
    assert written.startswith("# s1-connect：")
    assert workspace.read_marker(folder) == {
        "exercise": "s1-connect",
        "hints_shown": 0,
        "lang": "zh-CN",
    }
    # the rest of the workspace is what an English start makes
    assert (folder / "stage1_callbacks" / "crawler.py").read_text(encoding="utf-8").count(
        "raise NotImplementedError"
    ) == len(exercise.replace)


def instructions_fall_behind(name: str) -> list[str]:
    """How an exercise's Chinese instructions fall behind.  In a workspace the English
    README is not beside the Chinese: their note must say where it is."""
    text = workspace.instructions(catalog.named(name), "zh-CN")
    wrong = []
    if workspace.ORIGINAL_BESIDE in text:
        wrong.append("the note still says the English page is beside")
    if f"shared/tools/exercises/{name}/README.md" not in text.split("\n## ")[0]:
        wrong.append("the note does not say where the English README is")
    if len(CJK.findall(text)) <= 500:
        wrong.append("README.zh-CN.md is not Chinese")
    return wrong


def test_the_locale_chooses_chinese_where_no_lang_does_and_lang_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s1-loop")
    english = exercise.instructions.read_text(encoding="utf-8")
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["start", "s1-loop", "--into", str(tmp_path / "zh")]) == 0
    assert (tmp_path / "zh" / "INSTRUCTIONS.md").read_text(encoding="utf-8") == (
        workspace.instructions(exercise, "zh-CN")
    )
    assert main(["start", "s1-loop", "--lang", "en", "--into", str(tmp_path / "en")]) == 0
    assert (tmp_path / "en" / "INSTRUCTIONS.md").read_text(encoding="utf-8") == english
    monkeypatch.setenv("LC_ALL", "C.UTF-8")  # the first set variable decides: not Chinese
    assert main(["start", "s1-loop", "--into", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "INSTRUCTIONS.md").read_text(encoding="utf-8") == english
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("s1-loop 的工作区") and said[-1].startswith("read ")


# --- hints --------------------------------------------------------------------------------


def hints_fall_behind(name: str) -> list[str]:
    """How an exercise's Chinese hints fall behind: one per English hint, in the same order,
    each Chinese, each with the English hint's code kept."""
    exercise = catalog.named(name)
    english, chinese = exercise.hints, exercise.hints_in("zh-CN")
    if len(chinese) != len(english):
        return [
            f"{len(english)} hints in exercise.toml's `hints`, {len(chinese)} in "
            "`hints-zh-CN`: translate each, in the same order"
        ]
    wrong = []
    for number, (theirs, ours) in enumerate(zip(english, chinese, strict=True), 1):
        if not CJK.search(ours):
            wrong.append(f"Chinese hint {number} is not Chinese")
        if missing := [code for code in CODE.findall(theirs) if code not in ours]:
            wrong.append(f"Chinese hint {number} lacks the code {missing}")
    return wrong


def test_every_exercise_s_chinese_summary_instructions_and_hints_keep_up() -> None:
    """One test for every exercise: it names each one whose Chinese falls behind, and how."""
    assert len(NAMES) >= 15
    behind = {
        name: wrong
        for name in NAMES
        if (
            wrong := summary_falls_behind(name)
            + instructions_fall_behind(name)
            + hints_fall_behind(name)
        )
    }
    assert not behind, f"exercises whose Chinese falls behind: {behind}"


def test_hint_in_chinese_prints_the_chinese_hints_and_shares_the_count(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s1-loop")
    chinese = exercise.hints_in("zh-CN")
    assert main(["hint", "s1-loop", "--lang", "zh-CN"]) == 0
    assert capsys.readouterr().out == f"提示 1/{len(chinese)}：{chinese[0]}\n"
    assert main(["hint", "s1-loop", "--lang", "en"]) == 0  # one count, whatever the language
    assert capsys.readouterr().out.startswith(f"hint 2 of {len(chinese)}: {exercise.hints[1]}")


def test_a_workspace_started_in_chinese_gives_its_hints_in_chinese(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named("s2-future")
    assert main(["start", "s2-future", "--lang", "zh-CN"]) == 0  # the default workspace
    capsys.readouterr()
    total = len(exercise.hints)
    for _ in range(total + 1):
        assert main(["hint", "s2-future"]) == 0
    said = capsys.readouterr().out
    assert f"提示 {total}/{total}：" in said
    assert f"s2-future 没有更多提示了；下面是全部 {total} 条：" in said
    assert exercise.hints[0] not in said
    # `solve` speaks the workspace's language too, and so does an emptied function's error.
    folder = workspace.default_workspace("s2-future")
    stub = workspace.stub_message(exercise, "Future.result")
    assert again(f"NotImplementedError: {stub}", "zh-CN") == (
        "NotImplementedError: 练习 s2-future：写出 Future.result（见 INSTRUCTIONS.md）"
    )
    for _ in range(2):
        assert main(["solve", "s2-future"]) == 0
    said = capsys.readouterr().out
    assert f"参考答案已放进 {folder}；原来的内容保存在 .before-solve/ 中" in said
    assert f"{folder} 里已经是参考答案：什么也没有改" in said


# --- check --------------------------------------------------------------------------------


@pytest.mark.parametrize("table", ["tool", "tests"])
def test_the_sentences_are_the_same_in_every_language_with_the_same_blanks(table: str) -> None:
    """The tool's (messages.py) and the tests' (tests/exercises/reasons.toml)."""
    sentences = SENTENCES if table == "tool" else messages.tests_sentences()
    blank = re.compile(r"\{(\w+)\}")
    assert tuple(sentences) == LANGUAGES
    for lang, said in sentences.items():
        assert said.keys() == sentences["en"].keys(), lang
        for key, text in said.items():
            assert set(blank.findall(text)) == set(blank.findall(sentences["en"][key])), key
            assert lang == "en" or CJK.search(text), f"{lang} {key} is not translated"


def plugin() -> object:
    """tests/exercises/conftest.py as a module: the plugin that bounds each test in time."""
    spec = importlib.util.spec_from_file_location(
        "exercise_plugin", ROOT / "tests" / "exercises" / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_limits_and_the_tool_s_reasons_are_said_again_in_chinese() -> None:
    """A result keeps the English; the screen gets Chinese, sentence within sentence."""
    limit: str = plugin().limit_message(1.5)  # type: ignore[attr-defined]
    assert limit == say("en", "limit.test", seconds="1.5")  # the plugin's words are ours
    assert again(limit, "zh-CN") == say("zh-CN", "limit.test", seconds="1.5")
    nested = f"not run: a test of task 2 already {limit}"  # as the plugin words it
    assert again(nested, "zh-CN") == "未运行：任务 2 的一个测试已经" + say(
        "zh-CN", "limit.test", seconds="1.5"
    )
    whole = "not run: " + say("en", "limit.whole", seconds="9")
    assert again(whole, "zh-CN") == "未运行：整个检查在 9 秒后被停止"
    data = "AssertionError: not run: the crawl ended early"  # a test's own words: data
    assert again(data, "zh-CN") == data
    assert again(limit, "en") == limit
    caught: str = plugin().caught_message(1.5)  # type: ignore[attr-defined]
    assert caught == say("en", "limit.caught", seconds="1.5")
    assert again(caught, "zh-CN") == say("zh-CN", "limit.caught", seconds="1.5")


def check(folder: Path, *argv: str) -> tuple[int, dict[str, bytes]]:
    """`check` task 1 of the s1-loop workspace, every results format into a file of its
    own: the exit status, and each file's bytes by format (the screen gets the text)."""
    formats = ("json", "junit", "exercism", "gradescope")
    outputs = {form: folder.parent / f"{folder.name}-{form}{'-'.join(argv)}" for form in formats}
    args = ["check", "s1-loop", "--in", str(folder), "--task", "1", *argv]
    for form, path in outputs.items():
        args += ["--format", form, "--output", str(path)]
    status = main(args)
    return status, {form: path.read_bytes() for form, path in outputs.items()}


def test_check_speaks_chinese_and_its_results_and_status_do_not_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ws"
    assert main(["start", "s1-loop", "--lang", "zh-CN", "--into", str(folder)]) == 0
    capsys.readouterr()
    status, chinese = check(folder)  # the workspace's language: Chinese
    screen = capsys.readouterr().out
    assert status == 1
    assert screen.startswith("任务 1：未通过 - NotImplementedError: 练习 s1-loop：写出 ")
    assert "s1-loop：1 个任务中通过了 0 个，得分 0/1" in screen
    again = f"nox -s exercise -- check s1-loop --in {folder} --task 1 --verbose"
    assert f"（查看每个测试的详细报告：{again}）" in screen  # the same folder, the same task
    english_status, english = check(folder, "--lang", "en")
    screen = capsys.readouterr().out
    assert screen.startswith("task 1: FAILED - NotImplementedError: ")
    assert f"(each test's own report: {again})" in screen
    assert english_status == status
    assert chinese == english, "a results file changed with the language"
    assert b"task 1: FAILED" in english["gradescope"]  # its `output`: the English text

    (folder / "tests" / "conftest.py").unlink()  # a file that judges: not judged, exit 2
    status, chinese = check(folder)
    screen = capsys.readouterr().out
    assert status == 2
    assert "被改动的评判文件：tests/conftest.py（被删除）" in screen
    assert "任务 1：未通过 - 未评判：评判练习的文件被改动了" in screen
    english_status, english = check(folder, "--lang", "en")
    assert english_status == 2 and chinese == english
    assert "tampered: tests/conftest.py (removed)" in capsys.readouterr().out


# --- lab, and a language the tool does not speak ------------------------------------------


def test_lab_apply_in_chinese_names_the_chinese_guide(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))

    def lab(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "shared.tools.exercises", "lab", *argv],
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path), "LANG": "zh_CN.UTF-8"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    applied = lab("apply", "1")  # the locale says Chinese
    assert applied.returncode == 0, applied.stderr
    assert "先预测（labs/01-forget-task-done.zh-CN.md），再运行" in applied.stdout
    again = lab("apply", "1")  # the lab's own errors, in Chinese too
    assert again.returncode == 2
    assert again.stderr == "实验 01-forget-task-done 已经应用到 stage2_generators/crawler.py 上了\n"
    undone = lab("undo", "1", "--lang", "en")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.startswith("lab 01-forget-task-done: restored ")
    not_applied = lab("undo", "1")
    assert not_applied.returncode == 2
    assert not_applied.stderr.startswith("实验 01-forget-task-done 没有应用到 ")

    crawler = tmp_path / "stage2_generators" / "crawler.py"
    original = crawler.read_bytes()
    rewritten = original.replace(b"self.q.task_done()", b"self.q.task_done()  # rewritten")
    crawler.write_bytes(rewritten)  # the code the guide's hunk removes is not there any more
    refused = lab("apply", "1")
    assert refused.returncode == 2
    assert refused.stderr == (  # which function to look at, in Chinese
        "stage2_generators/crawler.py：实验指南中 Crawler.work 的 hunk 在代码中找不到相符之处："
        "请更新实验指南\n"
    )
    assert crawler.read_bytes() == rewritten, "nothing was changed"
    crawler.write_bytes(original)
    for package in PACKAGES:  # the copy is back as it was
        for path in (ROOT / package).rglob("*.py"):
            copy = tmp_path / path.relative_to(ROOT)
            assert copy.read_bytes() == path.read_bytes(), path


def test_what_stops_a_student_s_verb_is_said_in_chinese_too(
    tmp_path: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["check", "s1-loop", "--in", str(tmp_path), "--lang", "zh-CN"]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path} 不是工作区：先运行 `nox -s exercise -- start s1-loop --into {tmp_path}`\n"
    )
    assert main(["start", "s1-loop", "--into", str(tmp_path), "--lang", "zh-CN"]) == 2
    assert "已经存在，而且不是工作区：请选择一个新的或空的目录" in capsys.readouterr().err
    assert main(["hint", "no-such-exercise", "--lang", "zh-CN"]) == 2
    assert "没有名为 'no-such-exercise' 的练习；现有的练习：" in capsys.readouterr().err
    assert main(["check", "s1-loop", "--in", str(tmp_path)]) == 2  # no locale: English
    assert "is not a workspace: run `nox -s exercise -- start" in capsys.readouterr().err
    argv = ["check", "s1-loop", "--format", "json", "--format", "junit", "--lang", "zh-CN"]
    assert main(argv) == 2  # check's own usage error, before any workspace is looked at
    assert capsys.readouterr().err.startswith("每个 --output 要有一个 --format")
    assert main(["lab", "apply", "no-such-lab", "--lang", "zh-CN"]) == 2
    assert capsys.readouterr().err.startswith(
        "没有名为 'no-such-lab' 的实验；现有的实验：01-forget-task-done, "
    )


@pytest.mark.parametrize("table", ["tool", "tests"])
def test_every_sentence_a_result_or_an_error_keeps_in_english_is_said_again(table: str) -> None:
    """`again` finds each kept sentence's own template: none is mistaken for another, and a
    test's sentence is found after the class of what it raised too."""
    sentences = SENTENCES if table == "tool" else messages.tests_sentences()
    kept = [key for key in sentences["en"] if table == "tests" or key.startswith(KEPT)]
    assert "error.lab-applied" in kept or "s2-queue.join-never-woken" in kept
    for key in kept:
        fields = {name: f"<{name}>" for name in re.findall(r"\{(\w+)\}", sentences["en"][key])}
        english, chinese = (sentences[lang][key].format(**fields) for lang in ("en", "zh-CN"))
        assert again(english, "zh-CN") == chinese, key
        if table == "tests":
            raised = f"AssertionError: {english}"
            assert again(raised, "zh-CN") == f"AssertionError: {chinese}", key


@pytest.mark.parametrize(
    "argv",
    [
        ["start", "s1-loop", "--lang", "fr"],
        ["hint", "s1-loop", "--lang", "zh"],
        ["check", "s1-loop", "--lang", "zh_CN"],
        ["lab", "list", "--lang", "de"],
    ],
)
def test_an_unknown_language_is_an_error_that_names_the_known_ones(
    argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    said = capsys.readouterr().err
    assert f"invalid choice: '{argv[-1]}'" in said and "'en', 'zh-CN'" in said
    assert not out.exists(), "nothing was started"


def test_the_tool_s_sentences_come_from_one_table() -> None:
    """No module of the tool writes a sentence of its own that the table holds."""
    tool = catalog.EXERCISES
    code = "".join(
        (tool / name).read_text(encoding="utf-8")
        for name in ("cli.py", "reports.py", "checking.py", "manifest.py", "workspace.py", "lab.py")
    )
    for sentence in (
        "tasks passed",
        "no more hints",
        "predict first",
        "emptied, for you",
        "(changed)",
        "not judged",
        "stopped after",
        "FAILED - ",
        "is not a workspace: run",
        "no exercise named",
        "no lab named",
        "is applied already",
        "update the guide",
        "neither a diff nor a script",
        "start one with",
        "give one --format",
    ):
        assert sentence not in code, sentence
        assert any(sentence in text for text in messages.SENTENCES["en"].values())


def test_every_verb_s_help_is_in_chinese_under_zh_cn_whichever_side_of_the_verb_lang_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    top = cli.parser("zh-CN")
    (verbs,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    parsers = [top, *verbs.choices.values()]
    english = [
        f"{parser.prog}: {action.option_strings or action.dest}: {action.help}"
        for parser in parsers
        for action in parser._actions
        if action.help and action.help != argparse.SUPPRESS and not CJK.search(action.help)
    ]
    assert not english, "help in English under zh-CN:\n" + "\n".join(english)
    for argv in (["--lang", "zh-CN", "--help"], ["check", "--help", "--lang=zh-CN"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert capsys.readouterr().out.startswith("用法："), argv
    assert main(["--lang", "zh-CN", "list"]) == 0  # before the verb, it is the verb's
    assert capsys.readouterr().out.rstrip().endswith("start NAME --lang zh-CN")


# --- the walk: one exercise from start to solve, in Chinese -------------------------------


def test_a_walk_through_an_exercise_in_chinese_meets_no_english_sentence(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """start, check (failing), hint, solve, check (passing): what a Chinese student reads.

    Code is not prose: the diff `solve` shows and what sits in backticks are left out, and
    so are the commands the tool suggests (`nox -s exercise -- ...`).
    """
    from test_readme import english_sentences  # the pages' own test of the same thing

    folder = out / "s1-loop"
    steps = [
        (["start", "s1-loop", "--lang", "zh-CN"], 0),
        (["check", "s1-loop"], 1),
        (["hint", "s1-loop"], 0),
        (["solve", "s1-loop"], 0),
        (["check", "s1-loop"], 0),
    ]
    english = []
    for argv, status in steps:
        assert main(argv) == status, argv
        screen = capsys.readouterr()
        prose = [
            line
            for line in (screen.out + screen.err).splitlines()
            if not re.match(r"[-+@ ]|diff |nox ", line)  # the diff's lines, a command
        ]
        english += [f"{argv[0]}: {run}" for run in english_sentences("\n".join(prose))]
    assert (folder / ".exercise.json").exists()
    assert not english, "English under zh-CN:\n" + "\n".join(english)
