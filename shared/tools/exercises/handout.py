"""`handout NAME DIR`: a workspace made into a repository a teacher can publish as it is.

Besides the workspace (see workspace.py), a handout holds what a student's clone and
GitHub Classroom need without this repository: a README for the student, one
requirements.txt, the instructions with their commands rewritten for the folder, a
.gitignore that keeps the student's work in, this tool (without the other exercises,
and without `solve`'s reference: that stays in the repository), and a workflow that
runs `check --task N` once per task, each worth the task's points.  The manifest of
hashes then covers the tool, the workflow and requirements.txt too.
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

from shared.tools.exercises import manifest, studentfile, workspace
from shared.tools.exercises.catalog import EXERCISES, ROOT, Exercise, task_titles, tasks_in

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
    return {
        "README.md": readme(exercise).encode(),
        "INSTRUCTIONS.md": rewrite(exercise.instructions.read_text("utf-8")).encode(),
        "requirements.txt": requirements().encode(),
        ".gitignore": GITIGNORE.encode(),
        WORKFLOW: workflow(exercise).encode(),
        **tool_files(exercise),
    }


def protected(exercise: Exercise) -> dict[str, str]:
    """The digests of the handout's own files that judge or grade: not the student's to edit."""
    free = {"README.md", "INSTRUCTIONS.md", ".gitignore"}
    return {
        path: manifest.digest(data)
        for path, data in own_files(exercise).items()
        if path not in free and not path.endswith("/README.md")
    }


def is_handout(folder: Path) -> bool:
    """Whether ``folder`` was made by `handout` (its manifest names the workflow)."""
    return (folder / WORKFLOW).exists() or WORKFLOW in (manifest.read(folder) or {})


def make(exercise: Exercise, folder: Path) -> Path:
    """Make the handout in ``folder``, a new or empty folder; return it."""
    folder = folder.resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise workspace.WorkspaceError(f"{folder} exists and is not empty: choose a new folder")
    workspace.start(exercise, folder)
    for path, data in own_files(exercise).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    files = {**(manifest.read(folder) or {}), **protected(exercise)}
    manifest.write(folder, files, studentfile.facts(exercise))
    return folder
