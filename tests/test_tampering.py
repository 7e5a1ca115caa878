"""A grade of record the student's own files cannot fool (shared/tools/exercises/).

- Each cheat of CHEATS, applied to an unsolved handout of s2-future, scores 0 and is
  named in the tampered column by one `grade` of them all; the cheats written in the
  student's own file score 0 even when `check`'s runner is reached without the
  comparison of the file with the handout (the results channel and the isolated Python).
- For every exercise, the reference solution and every wrong answer of the teachers'
  catalogue are judged as code like any student's file: none is tampering.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import csv
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from shared.tools.exercises import (
    answers,
    catalog,
    checking,
    grading,
    handout,
    manifest,
    studentfile,
)
from shared.tools.exercises.bodies import put_bodies
from shared.tools.exercises.cli import main

pytestmark = pytest.mark.usefixtures("english_tool")  # the tool's sentences, in English

ROOT = Path(__file__).resolve().parent.parent
NAME = "s2-future"
FUTURES = "stage2_generators/futures.py"

#: pytest's report class made to read "passed" whatever the test did.
PATCH = """\
import _pytest.reports as _reports
_made = _reports.TestReport.from_item_and_call.__func__
def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report
_reports.TestReport.from_item_and_call = classmethod(_passed)
"""

#: At exit, a list of tests of the student's own, one a task, each with a "passed" record,
#: appended to the results file the environment names (how `check` once took its results).
ATEXIT = """\
import atexit as _atexit, json as _json, os as _os
def _all_passed():
    path = _os.environ.get("EXERCISE_RESULTS")
    if path:
        tests = [{"id": f"forged::test_{n}", "task": n} for n in (1, 2, 3)]
        with open(path, "a", encoding="utf-8") as file:
            file.write(_json.dumps({"event": "collected", "tests": tests}) + "\\n")
            for test in tests:
                for when in ("setup", "call", "teardown"):
                    entry = {"event": "report", "id": test["id"], "task": test["task"],
                             "when": when, "outcome": "passed", "reason": ""}
                    file.write(_json.dumps(entry) + "\\n")
_atexit.register(_all_passed)
"""

#: The reference module, looked for above sys.prefix and every folder the environment
#: names, run in this module's place.
EXEC = """\
import os as _os, sys as _sys
from pathlib import Path as _Path
_starts = [_sys.prefix, _sys.executable, _os.getcwd(), *_sys.path]
_starts += [v for value in _os.environ.values() for v in value.split(_os.pathsep)]
for _start in _starts:
    for _up in [_Path(_start), *_Path(_start).parents]:
        _ref = _up / "stage2_generators" / "futures.py"
        if _ref.is_file() and "NotImplementedError(" not in _ref.read_text():
            exec(compile(_ref.read_text(), str(_ref), "exec"), globals())
            break
    else:
        continue
    break
"""

#: Under `check`, the tool's own process ends at once with status 0: a passed step.
EXIT = """
import os as _os, sys as _sys
if "check" in _sys.argv:
    _os._exit(0)
"""


@dataclass(frozen=True)
class Cheat:
    """One thing a student might do to an unsolved handout, and what grade must name."""

    name: str
    path: str  # the file it changes
    named: str  # words the tampered column must hold
    own_file: bool = True  # written in the student's own file: the runner is tried too

    def apply(self, folder: Path) -> None:
        """Do it to the handout in ``folder``."""
        file = folder / self.path
        text = file.read_text(encoding="utf-8")
        if self.name == "patch-in-a-body":
            body = "        " + PATCH.replace("\n", "\n        ").rstrip() + "\n"
            body += "        raise NotImplementedError\n"
            text = put_bodies(text, {"Future._finish": body})
        elif self.name == "workflow-true":
            text = re.sub(r"command: .*", "command: 'true'", text)
            recorded = manifest.read(folder) or {}
            recorded[self.path] = manifest.digest(text.encode())
            manifest.write(folder, recorded, manifest.read_code(folder))
        else:
            text += "\n" + {"atexit": ATEXIT, "exec-reference": EXEC, "patch-at-import": PATCH}.get(
                self.name, EXIT
            )
        file.write_text(text, encoding="utf-8")


CHEATS = [
    Cheat("atexit", FUTURES, f"{FUTURES}:"),
    Cheat("exec-reference", FUTURES, f"{FUTURES}:"),
    Cheat("patch-at-import", FUTURES, f"{FUTURES}:"),
    Cheat("patch-in-a-body", FUTURES, "an import in Future._finish"),
    Cheat("exit-under-check", "shared/__init__.py", "shared/__init__.py (changed)", False),
    Cheat("workflow-true", handout.WORKFLOW, f"{manifest.MANIFEST} (changed)", False),
]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """One `grade` of an unsolved handout per cheat: each folder's CSV row, by cheat."""
    here = tmp_path_factory.mktemp("class")
    for cheat in CHEATS:
        handout.make(catalog.named(NAME), here / cheat.name)
        cheat.apply(here / cheat.name)
    table = here / "class.csv"
    argv = ["grade", NAME, *(str(here / c.name) for c in CHEATS), "--csv", str(table)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--diff"]) == 0
    with table.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file))
    # --diff: after the table, each student's bodies against the handout's.
    shown = out.getvalue()
    assert f"+++ {here / 'patch-in-a-body'}/{FUTURES}:Future._finish" in shown
    assert "+        _reports.TestReport.from_item_and_call = classmethod(_passed)" in shown
    return {Path(row["folder"]).name: row for row in rows}


@pytest.mark.parametrize("cheat", CHEATS, ids=lambda cheat: cheat.name)
def test_a_cheat_on_an_unsolved_handout_scores_nothing_and_is_named(
    cheat: Cheat, graded: dict[str, dict[str, str]], tmp_path: Path
) -> None:
    row = graded[cheat.name]
    assert (row["total"], row["max"]) == ("0", "3")
    assert cheat.named in row["tampered"], row["tampered"]
    if not cheat.own_file:
        return
    # Past the comparison with the handout, the runner still gives the cheat nothing.
    folder = tmp_path / "handout"
    exercise = catalog.named(NAME)
    handout.make(exercise, folder)
    cheat.apply(folder)
    # In the handout, check names it from the manifest's outline, and runs nothing.
    ran = subprocess.run(
        [sys.executable, "-m", "shared.tools.exercises", "check", NAME],
        cwd=folder,
        env=dict(os.environ, PYTHONPATH=""),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2 and f"tampered: {FUTURES}:" in ran.stdout, ran.stdout
    teacher = grading.Teacher(exercise, tmp_path / "teacher")
    (tmp_path / "teacher").mkdir()
    result = checking.run_check(exercise, folder, 10, 120, pristine=ROOT, isolated=teacher.site)
    assert [task.passed for task in result.tasks] == [False, False, False]
    assert result.ran and not result.problems and not result.tampered, result.problems


def test_only_signed_records_count_once_each_for_the_teachers_tests(tmp_path: Path) -> None:
    exercise = catalog.named(NAME)
    module = (ROOT / exercise.tests).read_text(encoding="utf-8")
    functions = checking.test_functions(module)
    assert set(functions.values()) == {frozenset({1}), frozenset({2}), frozenset({3})}
    key = b"k" * 32
    tests = [{"id": f"{exercise.tests}::{name}", "task": min(n)} for name, n in functions.items()]
    honest = [{"event": "collected", "tests": tests}]
    honest += [
        {"event": "modules", "files": {"stage2_generators.futures": str(tmp_path / FUTURES)}}
    ]
    for test in tests:
        for when in ("setup", "call", "teardown"):
            honest.append({"event": "report", "when": when, "outcome": "passed", **test})

    def signed(records: list[dict[str, object]], secret: bytes = key) -> str:
        lines = []
        for record in records:
            text = json.dumps(record, sort_keys=True)
            mac = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
            lines.append(json.dumps({"record": text, "mac": mac}) + "\n")
        return "".join(lines)

    def verdict(text: str) -> checking.CheckResult:
        records, forged = checking.read_records(text, key)
        return checking.judge(
            records, [1, 2, 3], exercise, tmp_path, None, expected_tests=functions, forged=forged
        )

    assert verdict(signed(honest)).passed
    # Unsigned, signed with another secret, a verdict twice, a test of the student's own.
    unsigned = json.dumps(honest[-1]) + "\n"
    for text in [
        signed(honest) + unsigned,
        signed(honest) + signed(honest[-1:], b"x" * 32),
        signed(honest) + signed(honest[-1:]),
        signed([*honest, {"event": "report", "id": "t.py::test_mine", "when": "call"}]),
    ]:
        result = verdict(text)
        assert result.tampered and not result.passed, text
        assert all(task.reasons[0].startswith("not judged: the results") for task in result.tasks)
    # A teacher's test that never ran fails its task, whatever else passed.
    missing = [r for r in honest if tests[0]["id"] not in (r.get("id"), None)]
    missing[0] = {"event": "collected", "tests": tests[1:]}
    result = verdict(signed(missing))
    assert not result.tampered and [t.passed for t in result.tasks] == [False, True, True]


@pytest.mark.parametrize("name", sorted(e.name for e in catalog.all_exercises()))
def test_references_and_wrong_answers_are_judged_as_answers_not_tampering(name: str) -> None:
    exercise = catalog.named(name)
    known = studentfile.facts(exercise)
    allowed = set(known["granted"])

    def judged(path: str, text: str) -> list[str]:
        entry = known["files"][path]
        theirs = [(label, digest) for label, digest in entry["outline"]]
        return studentfile.judge(path, text.encode(), entry["emptied"], theirs, allowed)

    catalogue = answers.load(exercise)
    for path in known["files"]:
        assert judged(path, (ROOT / path).read_text(encoding="utf-8")) == [], path
    for mistake in catalogue.mistakes:
        target = mistake.edit.target
        text = (ROOT / target.path).read_text(encoding="utf-8")
        wrong = put_bodies(text, {target.qualname: catalogue.wrong_body(mistake)})
        assert judged(target.path, wrong) == [], mistake.name


#: Bodies of Future.add_done_callback: what a student may write (None), and what reaches
#: past the code under test (the words the tampered line must hold).
BODIES = [
    ("loop = get_running_loop()\nfor f in [fn]:\n    loop.call_soon(f, self)", None),
    ("count = 0\ndef bump():\n    nonlocal count\n    count += 1\nbump()", None),
    ("if not callable(fn):\n    raise TypeError(type(self).__name__)", None),
    ("self._callbacks = [*self._callbacks, cast(Any, fn)]", None),
    ("import os", "an import"),
    ("sys.modules.clear()", "`sys`"),
    ('exec("x = 1")', "`exec`"),
    ("fn.__globals__.clear()", "`.__globals__`"),
    ('globals()["Future"] = None', "`globals`"),
    ('getattr(fn, "x")', "`getattr`"),
    ("global InvalidStateError\nInvalidStateError = ValueError", "`global`"),
    ("frame = self._exception.__traceback__.tb_frame", "`.__traceback__`"),
    ("get_running_loop.f_back", "`.f_back`"),
    ("_reports = __import__('_pytest.reports')", "`__import__`"),
    # Honest edits (GRADING.md): an attribute by a constant name, a pure module's names,
    # a local that shares a plain builtin's name.
    ('getattr(self, "_state")', None),
    ("from collections import deque\nwaiting = deque([fn])", None),
    ("import heapq\nheap: list[int] = []\nheapq.heappush(heap, 1)", None),
    ("next = fn\nid = 1", None),
    # A name that reaches a body through a field the old deny-list did not read...
    ("def inner(open=open):\n    return open\ninner()", "`open`"),
    ("run = lambda exec=exec: exec\nrun()", "`exec`"),
    ("match fn:\n    case object(__globals__=g):\n        pass", "`.__globals__`"),
    ("from heapq import heappush as open", "`open`"),
    # ... or from a string, or through a frame, a format or a class made of a mapping.
    ("name = 'x'\ngetattr(fn, name)", "`getattr` of a name"),
    ('getattr(fn, "__globals__")', "`getattr` of a name"),
    ('"{0.__globals__}".format(fn)', "`.format`"),
    ("type('Anything', (), {})", "`type` with more than one argument"),
    ("get_running_loop().current_task().get_stack()", "`.get_stack`"),
    ("import socket", "an import"),
    ("from collections import _sys", "an import"),
    # An attribute set in dead code opens nothing: only self's own are the body's.
    (
        "import collections\nif collections is None:\n    self._sys = None\ncollections._sys",
        "`._sys`",
    ),
    (
        "import collections\nmatch collections:\n    case object(_sys=found):\n        pass",
        "`._sys`",
    ),
    # A local named like a module imports nothing: it is the student's.
    ("queue = [fn]\nchunk = queue", None),
    # A name turned from a string, by spreading arguments or passing getattr on...
    ('getattr(*(fn, "__globals__"), "result")', "`getattr` of a name"),
    ("look = getattr\nlook(fn, 'x')", "`getattr`"),
    # ... or by a class pattern whose positions a string names (a namedtuple's fields).
    (
        "from collections import namedtuple\nP = namedtuple('P', 'gi_frame')\n"
        "match fn:\n    case P(frame):\n        pass",
        "a class pattern by position",
    ),
    ("match fn:\n    case int(n):\n        pass", None),
    # The public names of what the stages work with are an answer's to reach for (a
    # Queue's empty, a socket's sendall, asyncio's Lock): the tests judge them...
    ("fn.empty()\nfn.sendall(b'')\nfn.Lock()\nfn.result()", None),
    # ... but not those that reach past the crawl: threads, processes, descriptors.
    ("fn.run_in_executor(None, fn)", "`.run_in_executor`"),
    ("fn.to_thread(fn)", "`.to_thread`"),
    ("fn.create_subprocess_exec('ls')", "`.create_subprocess_exec`"),
    ("fn.fromfd(1, 2, 1)", "`.fromfd`"),
]


@pytest.mark.parametrize(("body", "words"), BODIES, ids=[words or "fine" for _, words in BODIES])
def test_a_body_may_use_what_a_solution_is_made_of_and_nothing_else(
    body: str, words: str | None
) -> None:
    exercise = catalog.named(NAME)
    known = studentfile.facts(exercise)
    entry = known["files"][FUTURES]
    handed = (ROOT / FUTURES).read_text(encoding="utf-8")
    indented = "".join(f"        {line}\n" for line in body.splitlines())
    text = put_bodies(handed, {"Future.add_done_callback": indented})
    theirs = [(label, digest) for label, digest in entry["outline"]]
    allowed = set(known["granted"])
    found = studentfile.judge(FUTURES, text.encode(), entry["emptied"], theirs, allowed)
    if words is None:
        assert found == []
    else:
        first = text[: text.index(indented)].count("\n") + 1  # the body's first line
        lines = range(first, first + len(body.splitlines()))
        named = [f for f in found if words in f and "in Future.add_done_callback:" in f]
        assert named and int(named[0].split(":")[1]) in lines, found


def test_every_name_the_running_python_s_grammar_holds_is_judged() -> None:
    # Each field of type `identifier` in the running Python's `ast` (read from the grammar
    # each node class carries) has a role in the judge: a new syntax on a new Python that
    # names something fails here, and the judge refuses its names until it has one.
    fields = {(kind, field) for kind, names in studentfile.name_fields().items() for field in names}
    assert ("Name", "id") in fields and ("Attribute", "attr") in fields  # the grammar was read
    assert fields <= set(studentfile.NAME_FIELDS), fields - set(studentfile.NAME_FIELDS)
    # And a name in a field the judge does not know is refused, not passed.
    saved = dict(studentfile.NAME_FIELDS)
    del studentfile.NAME_FIELDS[("Attribute", "attr")]
    try:
        judge = studentfile.Judge(studentfile.Module(frozenset(), frozenset(), frozenset()), set())
        tree = ast.parse("def f():\n    return f.anything\n")
        assert any(
            "syntax the grader does not know" in what for _, what in judge.body(tree.body[0])
        )
    finally:
        studentfile.NAME_FIELDS.update(saved)


def test_every_builtin_is_either_safe_or_refused() -> None:
    # A builtin that a new Python adds is sorted here before any body may use it.
    unsorted = {
        name
        for name in dir(builtins)
        if not name.startswith("_")
        and not studentfile.safe_builtin(name)
        and name not in studentfile.REFUSED_BUILTINS | studentfile.NAME_BUILTINS
    }
    assert unsorted == set()
    assert not studentfile.SAFE_BUILTINS & studentfile.REFUSED_BUILTINS


def test_the_lesson_s_modules_are_those_the_stages_import() -> None:
    # Their public names are allowed attributes (studentfile.lesson_attributes): a module
    # a stage starts to import joins them here, and one it drops leaves.
    found: set[str] = set()
    for folder in ("stage1_callbacks", "stage2_generators", "stage3_asyncio"):
        for file in (ROOT / folder).glob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    found.add(node.module)
    found = {m for m in found if m.partition(".")[0] not in studentfile.MODULES}
    found -= {"__future__", "stage1_callbacks", "stage2_generators", "stage3_asyncio", "shared"}
    assert set(studentfile.LESSON_MODULES) == found


#: What a handout's manifest keeps to judge the student's files, as a Python made it.
FACTS = """\
import json, sys
sys.path.insert(0, sys.argv[1])
from shared.tools.exercises import catalog, studentfile
facts = {e.name: studentfile.facts(e) for e in catalog.all_exercises()}
print(json.dumps(facts, sort_keys=True))
"""


def test_a_handout_made_on_one_python_is_judged_alike_on_every_other() -> None:
    # Every Python 3.11+ this machine has (CI's: 3.11, 3.12, 3.13) makes the manifest's
    # facts of every exercise: outlines, and what the references use. They must be the
    # same text, or a handout made on one version is "tampered" on another.
    here = json.dumps(
        {e.name: studentfile.facts(e) for e in catalog.all_exercises()}, sort_keys=True
    )
    others = {
        found
        for minor in range(11, 20)
        if (found := shutil.which(f"python3.{minor}")) and f"3.{minor}" not in sys.version[:5]
    }
    for python in sorted(others):
        made = subprocess.run(
            [python, "-I", "-c", FACTS, str(ROOT)], capture_output=True, text=True, timeout=120
        )
        if made.returncode == 127:
            continue  # a pyenv shim of a version that is not selected
        assert made.returncode == 0, made.stderr
        assert json.loads(made.stdout) == json.loads(here), python
    # And the reference's own file is no tampering under those facts, here.
    assert studentfile.judge_folder(ROOT, json.loads(here)[NAME]) == []


#: A check that leaves a process behind: it leaves the session, holds the check's pipes,
#: and would live on for a minute (its command line carries a mark to look for).
DAEMON = """
import os as _os, sys as _sys
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _os.execv(_sys.executable, [_sys.executable, "-c", "import time; time.sleep(60)", "{mark}"])
    _os._exit(0)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; Linux's layers")
@pytest.mark.parametrize("layer", ["bubblewrap", "subreaper"])
def test_a_check_leaves_no_process_behind_to_hold_its_pipes_or_touch_the_next(
    layer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if layer == "bubblewrap" and checking.sandbox.bubblewrap() is None:
        # As the browser tests: skipped on a machine without it, unless CI asks for it.
        reason = "bubblewrap does not run here (apt install bubblewrap)"
        if os.environ.get("CRAWLER500_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"CRAWLER500_REQUIRE_SANDBOX=1, but {reason}")
        pytest.skip(reason)
    if layer == "subreaper":
        monkeypatch.setattr(checking.sandbox, "bubblewrap", lambda: None)
    exercise = catalog.named(NAME)
    folder = tmp_path / "handout"
    handout.make(exercise, folder)
    mark = f"left-behind-{os.getpid()}-{layer}"
    with (folder / FUTURES).open("a", encoding="utf-8") as file:
        file.write(DAEMON.format(mark=mark))  # past the judge: the runner is reached directly
    teacher = grading.Teacher(exercise, tmp_path / "teacher")
    (tmp_path / "teacher").mkdir()
    started = time.monotonic()
    result = checking.run_check(exercise, folder, 10, 120, pristine=ROOT, isolated=teacher.site)
    # The check ended when its tests did, not when the pipes' last holder did (60 s)...
    assert time.monotonic() - started < 50
    assert result.ran and [task.passed for task in result.tasks] == [False, False, False]

    def alive() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if mark in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(entry.name)
        return found

    # ... and nothing it started is alive after it.
    assert alive() == []


def test_no_folder_ends_or_stalls_the_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercise = catalog.named(NAME)
    made = {}
    traps = ("catches", "deep", "latin1", "coding", "linebreak", "device", "language", "fifo")
    traps += ("git",)
    for who in (*traps, "escape", "solved"):
        made[who] = tmp_path / who
        handout.make(exercise, made[who])
    assert main(["solve", NAME, "--in", str(made["solved"])]) == 0
    forever = "        while True:\n            try:\n                while True:\n"
    forever += "                    pass\n            except BaseException:\n                pass\n"
    file = made["catches"] / FUTURES
    file.write_text(put_bodies(file.read_text(), {"Future._finish": forever}))
    file = made["deep"] / FUTURES
    deep = "        x = " + "-" * 5000 + "1\n"
    file.write_text(put_bodies(file.read_text(), {"Future._finish": deep}))
    file = made["latin1"] / FUTURES
    file.write_bytes(file.read_bytes() + b"# caf\xe9\n")
    file = made["coding"] / FUTURES
    file.write_text("# -*- coding: utf-7 -*-\n" + file.read_text())
    file = made["linebreak"] / FUTURES  # a line break for --diff, none for Python
    file.write_text("# pad\u2028\u2028\u2028\n" + file.read_text())
    (made["linebreak"] / "notes-\udcff.txt").write_bytes(b"")  # a name that is not UTF-8
    (made["device"] / FUTURES).unlink()
    (made["device"] / FUTURES).symlink_to("/dev/zero")
    marker = made["language"] / ".exercise.json"
    marker.write_text(marker.read_text().replace('"lang": "en"', '"lang": "xx-YY"'))
    (made["fifo"] / ".exercise.json").unlink()  # a marker that would block whoever reads it
    os.mkfifo(made["fifo"] / ".exercise.json")
    (made["git"] / "stage2_generators" / ".git").mkdir()  # copied with the package: no
    (made["git"] / "stage2_generators" / ".git" / "zero").symlink_to("/dev/zero")
    file = made["escape"] / FUTURES  # a comment that would erase the lines above it
    erase = "        raise ValueError  # \x1b[8A\x1b[J honest work below\n"
    file.write_text(put_bodies(file.read_text(), {"Future._finish": erase}))
    capsys.readouterr()
    table = tmp_path / "class.csv"
    argv = ["grade", NAME, *map(str, made.values()), "--csv", str(table), "--diff"]
    assert main([*argv, "--time-limit", "2", "--total-limit", "60"]) == 0
    with table.open(encoding="utf-8", newline="") as file:
        rows = {Path(row["folder"]).name: row for row in csv.DictReader(file)}
    assert list(rows) == list(made)  # every folder has its row, in order
    assert rows["solved"]["total"] == "3"
    assert all(rows[who]["total"] == "0" for who in made if who != "solved")
    assert "nested too deeply" in rows["deep"]["tampered"]
    assert "not UTF-8" in rows["latin1"]["tampered"]
    assert "declares the coding utf-7" in rows["coding"]["tampered"]
    assert "holds U+2028" in rows["linebreak"]["tampered"]
    assert "notes-\\xff.txt (added)" in rows["linebreak"]["tampered"]
    assert "a link" in rows["device"]["tampered"]
    assert rows["language"]["tampered"] == rows["language"]["problem"] == ""
    assert rows["fifo"]["problem"] == f"not a workspace of {NAME}"
    assert "stage2_generators/.git/zero" in rows["git"]["tampered"]
    shown = capsys.readouterr().out  # --diff read every file it could, and said why not
    assert f"{made['device']}/{FUTURES}:Future._finish: cannot be read (a link)" in shown
    assert "\x1b" not in shown and "\\x1b[8A" in shown  # shown, not obeyed
    # The body that catches its time limit is stopped at once, with a sentence, and the
    # check ends there rather than at the whole check's limit.
    result = checking.run_check(exercise, made["catches"], 2, 60, pristine=ROOT)
    [reason] = result.tasks[0].reasons[:1]
    assert "went on after its 2 s were up" in reason, reason
    assert not any("whole check was stopped" in r for t in result.tasks for r in t.reasons)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("time.sleep(0.1)", "every other fetch stops with it: schedule the rest instead"),
        ("import os", "an import runs code outside the exercise"),
        ("sys.modules.clear()", "it reaches into the interpreter"),
        ("self.frobnicate()", "no solution of this exercise needs it"),
        ("self.selector.fromfd(1)", "it reaches past the crawl, to threads, processes or files"),
    ],
)
def test_a_refused_body_is_told_why_in_the_chapter_s_terms(body: str, words: str) -> None:
    # A student who sleeps in a callback hears that it blocks the loop, and the task's
    # reason says the student's own file was refused, not that a judging file changed.
    exercise = catalog.named("s1-loop")
    known = studentfile.facts(exercise)
    [(path, entry)] = known["files"].items()
    text = put_bodies(
        (ROOT / path).read_text(encoding="utf-8"), {"EventLoop.run_once": f"        {body}\n"}
    )
    theirs = [(label, digest) for label, digest in entry["outline"]]
    found = studentfile.judge(path, text.encode(), entry["emptied"], theirs, set(known["granted"]))
    assert found and all(words in line for line in found), found
    [reason] = {task.reasons[0] for task in checking.not_judged([1, 2], found).tasks}
    assert reason.startswith("not judged: your file does more than the exercise allows")


#: Bodies of s1-stack-ripping's Crawler.callback_failed, whose reference grants `getattr`
#: and `__self__` (getattr(callback, "__self__", None)): granted in that form alone.
GRANTED = [
    ('owner = getattr(callback, "__self__", None)', None),
    ('getattr(Crawler.crawl, "__glob" + "als__")', "`getattr` of a name"),
    ('getattr(print.__self__, "__import__")', "`getattr` of a name"),
    ("print.__self__.open", "`.open`"),
]


@pytest.mark.parametrize(("body", "words"), GRANTED, ids=[w or "fine" for _, w in GRANTED])
def test_what_a_reference_grants_it_grants_in_its_own_form(body: str, words: str | None) -> None:
    exercise = catalog.named("s1-stack-ripping")
    known = studentfile.facts(exercise)
    path = "stage1_callbacks/crawler.py"
    entry = known["files"][path]
    assert {"getattr", "__self__"} <= set(known["granted"])  # what makes this case
    text = put_bodies(
        (ROOT / path).read_text(encoding="utf-8"),
        {"Crawler.callback_failed": f"        {body}\n        raise exc\n"},
    )
    theirs = [(label, digest) for label, digest in entry["outline"]]
    found = studentfile.judge(path, text.encode(), entry["emptied"], theirs, set(known["granted"]))
    assert (found == []) if words is None else any(words in line for line in found), found
