"""What the browser tab asks of Python: the exercises, a workspace, a check, a hint, a zip.

This module runs inside Pyodide, in the page's Web Worker (site/worker.js), with the
repository unpacked at /repo and the stand-ins of standins/ on the path.  Every answer is
the command line's own: `check` and `hint` run through shared.tools.exercises.cli, the
check's pytest in this process (inprocess.py: Pyodide starts no subprocess), so a
verdict, a reason or a hint reads in the tab exactly as it does in a terminal.  Each
function takes and returns plain strings (JSON), which cross into JavaScript as they are.

A workspace lives in Pyodide's memory, at /workspaces/NAME; the tab keeps the student's
files and the workspace's marker (its hint count and last results) in the browser's
storage, and hands them back to `open` on the next visit.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

from shared.tools.browser import waiting
from shared.tools.exercises import catalog, checking, cli, workspace
from shared.tools.exercises.catalog import ROOT, Exercise
from shared.tools.exercises.inprocess import pytest_in_process

if sys.platform == "emscripten":  # Pyodide: in a terminal (tests/test_browser.py), as it is
    waiting.install()  # before any stage is imported

WORKSPACES = Path("/workspaces")
#: What a browser tab cannot do, by the module a test imports to do it: an exercise whose
#: tests (or the files they share) import one of these is listed, not run, with the reason.
CANNOT = {
    "socket": {
        "en": "its tests open sockets, which a browser tab does not have",
        "zh-CN": "它的测试要打开 socket，而浏览器标签页里没有 socket",
    },
    "ssl": {
        "en": "its tests speak TLS over sockets, which a browser tab does not have",
        "zh-CN": "它的测试要通过 socket 使用 TLS，而浏览器标签页里没有",
    },
    "threading": {
        "en": "its tests start threads, which Python in a browser tab cannot",
        "zh-CN": "它的测试要启动线程，而浏览器标签页里的 Python 做不到",
    },
    "signal": {
        "en": "its tests send signals, which Python in a browser tab cannot",
        "zh-CN": "它的测试要发送信号，而浏览器标签页里的 Python 做不到",
    },
    "shared.testsite": {
        "en": "its tests serve the test site from a thread, over sockets",
        "zh-CN": "它的测试要在一个线程里通过 socket 提供测试网站",
    },
    "aiohttp": {
        "en": "its tests run aiohttp, which needs sockets",
        "zh-CN": "它的测试要运行 aiohttp，而 aiohttp 需要 socket",
    },
}
TASK_LINE = re.compile(r"^(?:task (\d+): (passed|FAILED)|任务 (\d+)：(通过|未通过))(?: - (.*))?$")


#: What the tab has of those modules, stood in for by waiting.py where Pyodide lacks it: a
#: test that uses only these (a socketpair() whose peer a timer writes to, say) runs here.
#: `socket.socket` is the type, for annotations; one that connects still fails.
STOOD_IN = {
    "socket": {"socketpair", "socket"},
    "threading": {"Timer", "get_ident"},
    "signal": {"signal", "getsignal", "pthread_kill", "setitimer", "getitimer"}
    | {"SIGUSR1", "SIGALRM", "ITIMER_REAL", "SIG_DFL", "SIG_IGN"},
}


def uses_of(path: Path) -> set[str]:
    """Every module a Python file imports, by its full dotted name, and every name it
    takes from a module the tab stands in for, as "socket.socketpair"."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in STOOD_IN
        ):
            found.add(f"{node.value.id}.{node.attr}")
    return found


def lacking(module: str, used: set[str]) -> bool:
    """Whether the code uses something of the module that a tab does not have."""
    allowed = STOOD_IN.get(module)
    if allowed is None:
        return any(name == module or name.startswith(f"{module}.") for name in used)
    prefix = f"{module}."
    return any(name.startswith(prefix) and name[len(prefix) :] not in allowed for name in used)


@functools.cache  # each check asks (named()): its test files are read once
def why_not(exercise: Exercise, lang: str) -> str:
    """Why the exercise cannot run in a browser tab ("" when it can)."""
    files = [exercise.tests, *(p for p in exercise.support if p.endswith(".py"))]
    used = set().union(*(uses_of(ROOT / path) for path in files))
    for module, reason in CANNOT.items():
        if lacking(module, used):
            return reason[lang]
    return ""


def edited_files(exercise: Exercise) -> list[str]:
    """The files whose functions the exercise empties, in the order it names them."""
    return list(dict.fromkeys(target.path for target in exercise.replace))


def exercises(lang: str) -> str:
    """Every exercise, as JSON: name, stage, summary, whether it runs here and why not, its
    files, and how many seconds its check may take."""
    return json.dumps(
        [
            {
                "name": exercise.name,
                "stage": exercise.stage,
                "summary": exercise.summary_in(lang),
                "runnable": not why_not(exercise, lang),
                "why_not": why_not(exercise, lang),
                "files": edited_files(exercise),
                # The whole check's limit in a terminal: the tab stops a check no sooner.
                "limit": checking.default_total_limit(checking.DEFAULT_TIME_LIMIT),
            }
            for exercise in catalog.all_exercises()
        ]
    )


def command(*argv: str) -> str:
    """Run the exercise tool's command line here; what it printed, both streams."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        cli.main(list(argv))
    return output.getvalue()


def folder_of(name: str) -> Path:
    """Where the exercise's workspace lives in this tab."""
    return WORKSPACES / name


def put(name: str, files_json: str) -> Path:
    """Write the student's files into the workspace, made first if this Python has none
    (the page started a fresh one, after a check that ran out of time); its folder."""
    folder = folder_of(name)
    exercise = named(name)
    if not (folder / workspace.MARKER).is_file():
        command("start", name, "--into", str(folder))
    allowed = set(edited_files(exercise))
    for path, text in json.loads(files_json).items():
        if path in allowed:  # nothing else of the workspace is the student's to replace
            (folder / path).write_text(text, encoding="utf-8")
    return folder


def named(name: str) -> Exercise:
    """The exercise of that name, if the tab may run it."""
    exercise = catalog.find(name)
    if exercise is None or why_not(exercise, "en"):
        raise ValueError(f"{name} is not an exercise this tab can run")
    return exercise


def state_of(name: str) -> str:
    """The workspace's marker file: the hints shown, the last check's results."""
    marker = folder_of(name) / workspace.MARKER
    return marker.read_text(encoding="utf-8") if marker.is_file() else ""


def open(name: str, lang: str, saved: str) -> str:
    """A fresh workspace of the exercise, with the files and marker ``saved`` put back."""
    exercise = named(name)
    folder = folder_of(name)
    shutil.rmtree(folder, ignore_errors=True)
    command("start", name, "--into", str(folder), "--lang", lang)
    if saved:
        kept = json.loads(saved)
        put(name, json.dumps(kept.get("files", {})))
        if kept.get("state"):
            (folder / workspace.MARKER).write_text(kept["state"], encoding="utf-8")
    instructions = "INSTRUCTIONS.md"
    files = {path: (folder / path).read_text(encoding="utf-8") for path in edited_files(exercise)}
    return json.dumps(
        {
            "instructions": (folder / instructions).read_text(encoding="utf-8"),
            "files": files,
            "state": state_of(name),
        }
    )


def tasks_in(output: str) -> list[dict[str, object]]:
    """Each task's line of a check's output: its number, verdict and reason."""
    found = []
    for line in output.splitlines():
        if match := TASK_LINE.match(line):
            number = match[1] or match[3]
            passed = (match[2] or match[4]) in ("passed", "通过")
            found.append({"task": int(number), "passed": passed, "reason": match[5] or ""})
    return found


def check(name: str, files_json: str, lang: str) -> str:
    """`check` on the student's files, its pytest in this process: the command's own text."""
    folder = put(name, files_json)
    run = checking._run
    checking._run = pytest_in_process
    try:
        output = command("check", name, "--in", str(folder), "--lang", lang)
    finally:
        checking._run = run
    # The folder a command may name is the exported zip's, unzipped: NAME/, not this tab's.
    output = output.replace(f"--in {folder}", f"--in {name}")
    return json.dumps({"output": output, "tasks": tasks_in(output), "state": state_of(name)})


def hint(name: str, files_json: str, lang: str) -> str:
    """`hint`: the next hint for the first task the last check failed."""
    folder = put(name, files_json)
    output = command("hint", name, "--in", str(folder), "--lang", lang)
    return json.dumps({"output": output, "state": state_of(name)})


def export(name: str, files_json: str) -> bytes:
    """The workspace as a zip, its folder named after the exercise: `check --in` takes it."""
    folder = put(name, files_json)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, Path(name, path.relative_to(folder)).as_posix())
    return data.getvalue()
