"""`handout NAME DIR`: a workspace made into a repository a teacher can publish as it is.

Besides the workspace (see workspace.py), a handout holds what a student's clone and
GitHub Classroom need without this repository: a README for the student, one
requirements.txt, the instructions with their commands rewritten for the folder (both in
English, README.md and INSTRUCTIONS.md, and in Chinese, README.zh-CN.md and
INSTRUCTIONS.zh-CN.md, so that a class may read either), a
.gitignore that keeps the student's work in, this tool (without the other exercises,
and without `solve`'s reference: that stays in the repository), and a workflow that
runs `check --task N` once per task, each worth the task's points.  The manifest of
hashes then covers the tool, the workflow and requirements.txt too.

The tool in a handout speaks the language `handout --lang` gave it, else the student's
locale's (LANG=zh_CN.UTF-8 gives Chinese), else English; a student's --lang wins.
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

from shared.tools.exercises import manifest, studentfile, workspace
from shared.tools.exercises.catalog import EXERCISES, ROOT, Exercise, task_titles, tasks_in
from shared.tools.language import LANGUAGES

TOOL = "python -m shared.tools.exercises"  # how the tool runs in a handout
WORKFLOW = ".github/workflows/classroom.yml"
#: Test dependencies the exercises do not need: selenium drives a browser for tests/test_show.py.
NOT_NEEDED = ("selenium", "pyyaml")
PYTHON = "3.12"  # the Python of the Classroom workflow
STAGE_PACKAGES = {
    "stage1": "stage1_callbacks",
    "stage2": "stage2_generators",
    "stage3": "stage3_asyncio",
}
TRACE = "--trace --max-tasks 2 --site-pages 6 --ignore-robots -q"  # what `nox -s trace` adds
#: Where a Chinese page's English original is, in a handout.
HANDOUT_ORIGINAL = "英文原文在同一目录的 `INSTRUCTIONS.md` 中"
GITIGNORE = """\
# What Python and pytest leave behind; your work is everything else.
__pycache__/
*.py[cod]
.venv/
.pytest_cache/
.before-solve/
"""


def requirements() -> str:
    """requirements.txt: the crawlers' dependencies and the checks', from pyproject.toml.

    The checks' are the dependency group `check` where there is one, else `test`, less
    what only the repository's own suite needs.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    groups = project["dependency-groups"]

    def group(name: str) -> list[str]:
        specs: list[str] = []
        for entry in groups[name]:  # a spec, or {include-group = "other"} (PEP 735)
            specs += group(entry["include-group"]) if isinstance(entry, dict) else [entry]
        return specs

    wanted = project["project"]["dependencies"] + group("check" if "check" in groups else "test")
    kept = [spec for spec in wanted if not spec.lower().startswith(NOT_NEEDED)]
    return "# Everything the checks need: python -m pip install -r requirements.txt\n" + "".join(
        f"{spec}\n" for spec in kept
    )


def rewrite(text: str) -> str:
    """The instructions with each `nox` command made one that runs in the handout."""
    text = re.sub(
        r"Start the workspace with `nox -s exercise -- start [\w-]+`",
        "This folder is your workspace",
        text,
    )
    text = re.sub(
        r"用 `nox -s exercise -- start [\w-]+` 建立工作区", "这个目录就是你的工作区", text
    )
    text = text.replace("nox -s exercise --", TOOL)
    text = re.sub(r"nox -s trace -- (stage\d)", lambda m: f"python -m {_stage(m)} {TRACE}", text)
    text = re.sub(r"nox -s (stage\d)(?: --)?", lambda m: f"python -m {_stage(m)}", text)
    text = text.replace("nox -s diff --", "python -m shared.tools.sidebyside")
    text = text.replace("nox -s show --", "python -m shared.tools.show")
    text = text.replace("nox -s compare", "python -m shared.tools.bench.compare")
    # "such as the repository's `.nox/NAME/bin/python` (on Windows `...python.exe`)"
    text = re.sub(
        r"the repository's\s+`\.nox/[\w-]+/bin/python`"
        r"(?:,\s+on\s+Windows\s+`[^`]*`|\s+\(on\s+Windows\s+`[^`]*`\))?",
        "the one you installed requirements.txt into",
        text,
    )
    # 例如仓库的 `.nox/class/bin/python`，Windows 上是 `...python.exe`
    text = re.sub(
        r"例如仓库的\s*`\.nox/[\w-]+/bin/python`(?:，\s*Windows\s*上是\s*`[^`]*`)?",
        "就是你安装了 requirements.txt 的那个",
        text,
    )
    text = re.sub(r"（`out/exercises/[\w-]+/`）", "（就是这个目录）", text)
    return re.sub(r"\(`out/exercises/[\w-]+/`\)", "(this one)", text)


def _stage(match: re.Match[str]) -> str:
    return STAGE_PACKAGES[match[1]]


def readme(exercise: Exercise) -> str:
    """The student's README.md: set up once, then check, hint, commit."""
    name = exercise.name
    return f"""\
# {name}: {exercise.idea}

{textwrap.fill(exercise.summary, 88)}

This repository holds three web crawlers (`stage1_callbacks/`, `stage2_generators/`,
`stage3_asyncio/`, and the code they share in `shared/`) with the functions of this
exercise emptied. `INSTRUCTIONS.md` says what to write, task by task.

中文说明：`README.zh-CN.md` 和 `INSTRUCTIONS.zh-CN.md`。

## Set up, once

With Python 3.11 or newer, on Linux or macOS:

```sh
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -r requirements.txt
```

On Windows (`py` is the Python launcher; any 3.11 or newer will do):

```sh
py -3.12 -m venv .venv
.venv\\Scripts\\activate
python -m pip install -r requirements.txt
```

Without a network, from a folder of wheels your teacher gives you (`DIR`), the install
is instead:

```sh
python -m pip install --no-index --find-links DIR -r requirements.txt
```

## Work

```sh
{TOOL} check {name}            # a line per task: passed, or why not
{TOOL} check {name} --task 1   # one task alone
{TOOL} hint {name}             # the next hint, one at a time
```

Commit and push your work: the workflow in `.github/workflows/` runs the same check,
once per task, and gives each task its points.

What is yours is the body of each function `INSTRUCTIONS.md` asks you to write, and
nothing else. Every other line of that file, and every other file, is your teacher's: an
import added at the top, code outside those functions, a changed test or workflow is
named as tampering by `check` and by your teacher's `grade`, and scores nothing. Inside
the functions, write what a solution needs: your own variables, loops and calls, the
module's own names and Python's ordinary builtins (no imports, no `sys`, `os`, `exec`,
`open` or the like).
"""


def readme_zh(exercise: Exercise) -> str:
    """The student's README.zh-CN.md: README.md in Chinese, the same commands."""
    name = exercise.name
    return f"""\
# {name}：{exercise.idea_in("zh-CN")}

{exercise.summary_in("zh-CN")}

这个仓库包含三个网络爬虫（`stage1_callbacks/`、`stage2_generators/`、`stage3_asyncio/`，以及
它们共用的代码 `shared/`），其中这个练习要你写的函数已被清空。`INSTRUCTIONS.zh-CN.md` 逐个任务
说明要写什么（英文原文是 `INSTRUCTIONS.md`）。

## 准备（只需一次）

用 Python 3.11 或更新的版本，在 Linux 或 macOS 上：

```sh
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -r requirements.txt
```

在 Windows 上（`py` 是 Python 启动器；3.11 或更新的任何版本都可以）：

```sh
py -3.12 -m venv .venv
.venv\\Scripts\\activate
python -m pip install -r requirements.txt
```

没有网络时，从老师给你的 wheel 目录（`DIR`）安装：

```sh
python -m pip install --no-index --find-links DIR -r requirements.txt
```

## 练习

```sh
{TOOL} check {name}            # 每个任务一行：通过，或者为什么没通过
{TOOL} check {name} --task 1   # 只检查任务 1
{TOOL} hint {name}             # 下一条提示，一次一条
```

在中文环境（例如 `LANG=zh_CN.UTF-8`）中，这些命令用中文回答；在别的环境中加上 `--lang zh-CN`。

提交并推送你的代码：`.github/workflows/` 中的工作流会运行同样的检查，每个任务一次，并给每个
任务记分。

属于你的只有 `INSTRUCTIONS.zh-CN.md` 要你写的那些函数的函数体，别的都不是。那个文件的其他每一行、
以及其他每个文件，都是老师的：在文件开头加的 import、函数之外的代码、改过的测试或工作流，都会被
`check` 和老师的 `grade` 指为篡改，不得分。在函数内部，写出答案需要的东西：你自己的变量、循环和
调用，模块自己的名字和 Python 的普通内置函数（不要 import，不要 `sys`、`os`、`exec`、`open`
之类）。
"""


def workflow(exercise: Exercise) -> str:
    """The GitHub Actions workflow for Classroom: a grading step per task, then the report."""
    tasks = tasks_in((ROOT / exercise.tests).read_text(encoding="utf-8"))
    titles = task_titles(exercise.instructions.read_text(encoding="utf-8"))
    steps = []
    for number in tasks:
        title = f"Task {number}: {titles.get(number, exercise.name)}".replace('"', "'")
        steps.append(
            f"""\
      - name: "{title}"
        id: task{number}
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: "{title}"
          command: {TOOL} check {exercise.name} --task {number}
          timeout: 10
          max-score: {exercise.points(number)}
"""
        )
    env = "".join(
        f'          TASK{n}_RESULTS: "${{{{steps.task{n}.outputs.result}}}}"\n' for n in tasks
    )
    runners = ",".join(f"task{n}" for n in tasks)
    return f"""\
# Grades {exercise.name} with its own checker, a step and its points per task.
name: Autograding Tests
on:
  - push
  - repository_dispatch
  - workflow_dispatch
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Checkout code
        uses: actions/checkout@v4
      - name: Set up Python
        uses: actions/setup-python@v5
        with:
          python-version: "{PYTHON}"
      - name: Install what the checks need
        run: python -m pip install -r requirements.txt
{"".join(steps)}\
      - name: Autograding Reporter
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
{env}\
        with:
          runners: {runners}
"""


def tool_files(exercise: Exercise) -> dict[str, bytes]:
    """This tool as a handout carries it: its modules and this one exercise's files."""
    files = {
        path.relative_to(ROOT).as_posix(): path.read_bytes()
        for path in sorted(EXERCISES.glob("*.py"))
    }
    folder = f"shared/tools/exercises/{exercise.name}"
    files[f"{folder}/exercise.toml"] = (exercise.folder / "exercise.toml").read_bytes()
    files[f"{folder}/README.md"] = rewrite(exercise.instructions.read_text("utf-8")).encode()
    return files


def own_files(exercise: Exercise) -> dict[str, bytes]:
    """Every file a handout has that a workspace has not, or has otherwise, by path."""
    chinese = exercise.instructions_in("zh-CN").read_text("utf-8")
    chinese = chinese.replace(workspace.ORIGINAL_BESIDE, HANDOUT_ORIGINAL, 1)
    return {
        "README.md": readme(exercise).encode(),
        "README.zh-CN.md": readme_zh(exercise).encode(),
        "INSTRUCTIONS.md": rewrite(exercise.instructions.read_text("utf-8")).encode(),
        "INSTRUCTIONS.zh-CN.md": rewrite(chinese).encode(),
        "requirements.txt": requirements().encode(),
        ".gitignore": GITIGNORE.encode(),
        WORKFLOW: workflow(exercise).encode(),
        **tool_files(exercise),
    }


def protected(exercise: Exercise) -> dict[str, str]:
    """The digests of the handout's own files that judge or grade: not the student's to edit."""
    free = {
        "README.md",
        "README.zh-CN.md",
        "INSTRUCTIONS.md",
        "INSTRUCTIONS.zh-CN.md",
        ".gitignore",
    }
    return {
        path: manifest.digest(data)
        for path, data in own_files(exercise).items()
        if path not in free and not path.endswith("/README.md")
    }


def is_handout(folder: Path) -> bool:
    """Whether ``folder`` was made by `handout` (its manifest names the workflow)."""
    return (folder / WORKFLOW).exists() or WORKFLOW in (manifest.read(folder) or {})


def make(exercise: Exercise, folder: Path, lang: str | None = None) -> Path:
    """Make the handout in ``folder``, a new or empty folder; return it.

    With ``lang`` the tool in it speaks that language; without, the student's locale's.
    """
    folder = folder.resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise workspace.WorkspaceError(f"{folder} exists and is not empty: choose a new folder")
    if lang is not None and lang not in LANGUAGES:
        raise workspace.WorkspaceError(f"no language {lang}: one of {', '.join(LANGUAGES)}")
    workspace.start(exercise, folder)
    marker = workspace.read_marker(folder) or {}
    marker.pop("lang", None)  # the locale decides, unless the teacher said
    workspace.write_marker(folder, {**marker, **({"lang": lang} if lang else {})})
    for path, data in own_files(exercise).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    files = {**(manifest.read(folder) or {}), **protected(exercise)}
    manifest.write(folder, files, studentfile.facts(exercise))
    return folder
