"""The "break it on purpose" labs (shared/tools/exercises/labs/) predict the truth.

Each lab guide prints a change as a diff, the commands to run and the symptom to expect.
The diff carries no line numbers: each hunk's header names the function it changes
(``@@ Crawler.work @@``) and the hunk is found by its own code, which must stand at
exactly one place.  These tests make the same change, never to the repository's files,
with the command a student types: `python -m shared.tools.exercises lab apply NAME`
(what `nox -s exercise -- lab apply NAME` runs), in a copy of the code in a temporary
folder, and the guide's own commands run there as processes, against a test site served
here so that the server's side can be watched too.  The labs that break nothing in the
repository are scripts, which the same command saves; their tests run the guide's
script and, where the guide shows the output, compare it line for line.  Each lab is
then driven once more in-process where that is the surer way to hold it still.

A stage may gain or lose lines anywhere (a test shifts every stage module down by one
line and applies every lab again); only when the code a hunk changes is itself rewritten
does the guide's test fail, naming the function: update the guide.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import gc
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import stage3_asyncio.crawler as stage3
from shared.crawling import Options
from shared.language import LOCALE_VARIABLES
from shared.testsite import Site, add_site_arguments, serve, site_from_arguments
from shared.tools.exercises.lab import (
    DiffMismatch,
    Hunk,
    LabError,
    apply_hunks,
    blocks,
    find_lab,
    locate,
    parse_diff,
    section,
)
from shared.tools.exercises.lab import apply as apply_lab
from shared.tools.exercises.lab import undo as undo_lab
from shared.tools.instruments.trace import coroutine_chain
from shared.tools.show import samples
from stage2_generators.crawler import Crawler as Stage2Crawler
from stage2_generators.futures import Future
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task, sleep

ROOT = Path(__file__).resolve().parent.parent
LABS = ROOT / "shared" / "tools" / "exercises" / "labs"
# What a correct run shows, and why: kept apart from the guides, out of students' sight.
ANSWERS = ROOT / "shared" / "tools" / "exercises" / "teachers" / "labs.md"
BOUND_S = 30  # far above any run here: only a hang ever reaches it
PARTS = ["## Break it", "## Predict", "## Run", "## Afterwards", "## Undo"]
ANSWER_PARTS = ["**In short.**", "### What you see", "### Why"]


# --- reading a guide ----------------------------------------------------------------------


def guide(name: str) -> str:
    """The text of one lab guide."""
    return (LABS / name).read_text(encoding="utf-8")


def guides() -> list[Path]:
    """Every lab guide, in order: NN-name.md (its Chinese NN-name.zh-CN.md aside)."""
    return sorted(p for p in LABS.glob("[0-9][0-9]-*.md") if not p.name.endswith(".zh-CN.md"))


def answer(name: str) -> str:
    """The teachers' answer to one lab: the section of ANSWERS headed by the guide's title."""
    title = guide(name).splitlines()[0].removeprefix("# ")
    return section(ANSWERS.read_text(encoding="utf-8"), f"## {title}")


def commands(text: str) -> list[list[str]]:
    """The ``$PY ...`` commands of the guide's Run section, split as a shell would."""
    found = []
    for block in blocks(section(text, "## Run"), "sh"):
        for line in block.splitlines():
            if line.startswith("$PY "):
                found.append(shlex.split(line, comments=True)[1:])
    assert found, "the Run section has no $PY command"
    return found


# --- making a lab's change in a copy of the code -----------------------------------------

PACKAGES = ("shared", "stage1_callbacks", "stage2_generators", "stage3_asyncio")
STAGES = PACKAGES[1:]


def lab_tool(code: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m shared.tools.exercises lab ...` in a copy of the code, as a student does."""
    return subprocess.run(
        [sys.executable, "-m", "shared.tools.exercises", "lab", *argv],
        cwd=code,
        env=dict(os.environ, PYTHONPATH=str(code)),
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )


def copy_of_the_code(dest: Path) -> Path:
    """The stages and shared/ (its tools and the guides too) copied into dest; return dest."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("*.pyc"))
    return dest


def applied_copy(name: str, dest: Path) -> Path:
    """A copy of the code with lab ``name``'s change made by the lab command; return dest."""
    done = lab_tool(copy_of_the_code(dest), "apply", name)
    assert done.returncode == 0, done.stderr
    return dest


def broken_copy(diff: str, dest: Path) -> Path:
    """Copy the packages a diff touches into dest and apply a diff there (lab 3's cure)."""
    for path, hunks in parse_diff(diff).items():
        package = ROOT / path.split("/")[0]
        if not (dest / package.name).exists():
            shutil.copytree(package, dest / package.name, ignore=shutil.ignore_patterns("*.pyc"))
        target = dest / path
        target.write_text(apply_hunks(path, target.read_text("utf-8"), hunks), "utf-8")
    return dest


# --- running a stage as a process ---------------------------------------------------------


@dataclass
class Run:
    """A crawl (or a script) running as a process; its output goes to files."""

    proc: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path
    json_path: Path

    def wait(self) -> int:
        """Wait for the end, within the bound; return the exit status."""
        return self.proc.wait(timeout=BOUND_S)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text("utf-8")

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text("utf-8")

    def doc(self) -> dict[str, Any]:
        """The JSON the crawl wrote."""
        doc: dict[str, Any] = json.loads(self.json_path.read_text("utf-8"))
        return doc

    def records(self) -> dict[str, dict[str, Any]]:
        """The crawl's records, by URL."""
        return {fetch["url"]: fetch for fetch in self.doc()["fetches"]}


def environment(code: Path | None) -> dict[str, str]:
    """The environment of a process that imports the code in ``code`` before the repository's,
    in English whatever this machine's locale: the tests read the report's words."""
    env = {name: value for name, value in os.environ.items() if name not in LOCALE_VARIABLES}
    paths = [str(code)] if code else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), env.get("PYTHONPATH", "")])
    return env


@contextmanager
def processes() -> Iterator[Callable[..., Run]]:
    """Start processes with the yielded function; on the way out, none is left running."""
    started: list[Run] = []

    def start(argv: list[str], workdir: Path, code: Path | None = None) -> Run:
        workdir.mkdir(parents=True, exist_ok=True)
        out, err, doc = workdir / "stdout", workdir / "stderr", workdir / "crawl.json"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, *argv],
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                cwd=code or ROOT,  # `python -m STAGE` imports the stage from here first
                env=environment(code),
            )
        run = Run(proc, out, err, doc)
        started.append(run)
        return run

    try:
        yield start
    finally:
        for run in started:
            if run.proc.poll() is None:
                run.proc.kill()
            run.proc.wait()


def lab_command(name: str, tmp_path: Path) -> tuple[list[str], Path]:
    """The guide's one command, and a copy of the code with the lab applied (the lab's
    number is the guide's first two characters)."""
    (command,) = commands(guide(name))
    return command, applied_copy(name[:2], tmp_path / "code")


@contextmanager
def command_and_variant(name: str, extra: str, tmp_path: Path) -> Iterator[tuple[Run, Run]]:
    """The guide's two commands, the second the first with ``extra`` added, both started on
    a copy with the lab applied (the lab's number is the guide's first two characters)."""
    command, variant = commands(guide(name))
    assert variant == [*command, extra]
    code = applied_copy(name[:2], tmp_path / "code")
    with processes() as start:
        yield start(command, tmp_path / "command", code), start(variant, tmp_path / "variant", code)


def crawl_argv(command: list[str], base_url: str, json_path: Path | None = None) -> list[str]:
    """A guide's ``-m STAGE --site-pages N ...`` command, aimed at our site instead.

    ``--site-pages 6`` makes the built-in site ``Site(6, traps=False)``; the tests serve
    that same site themselves, to watch the requests it receives.
    """
    assert command[0] == "-m", command
    args = list(command[2:])
    index = args.index("--site-pages")
    assert args[index + 1] == "6", "the tests serve the guides' six-page site"
    del args[index : index + 2]
    extra = ["--json", str(json_path)] if json_path else []
    return ["-m", command[1], base_url, *args, *extra]


def start_crawl(
    start: Callable[..., Run], command: list[str], base_url: str, workdir: Path, code: Path | None
) -> Run:
    """Start a guide's crawl command on our site, its JSON to ``workdir/crawl.json``."""
    return start(crawl_argv(command, base_url, workdir / "crawl.json"), workdir, code)


def six_pages() -> Site:
    """The site of ``--site-pages 6``: a root and five pages, no traps."""
    return Site(pages=6, traps=False)


@dataclass
class Step:
    """One line of --trace: when, who ran, what it ran, for which URL ("-": none)."""

    time: float
    who: str
    what: str
    url: str


def steps(stderr: str) -> list[Step]:
    """The --trace lines in a process's stderr, parsed."""
    found = []
    for line in stderr.splitlines():
        if re.match(r"^ *\d+\.\d{4}  ", line):
            when, who, *what, url = line.split()
            found.append(Step(float(when), who, " ".join(what), url))
    return found


def frames(stderr: str, after: str) -> list[str]:
    """The function names of the first traceback printed after a line containing ``after``."""
    text = stderr[stderr.index(after) :]
    text = text[text.index("Traceback (most recent call last):") :]
    names = []
    for line in text.splitlines()[1:]:
        if not line.startswith(" "):  # the exception's own line ends the traceback
            break
        if match := re.match(r'  File "[^"]+", line \d+, in (\S+)', line):
            names.append(match[1])
    return names


# --- the guides and their index -----------------------------------------------------------


def test_there_are_the_labs_the_index_lists() -> None:
    names = [path.name for path in guides()]
    assert names
    index = (LABS / "README.md").read_text("utf-8")
    linked = re.findall(r"\]\((\d\d-[\w-]+\.md)\)", index)
    assert sorted(set(linked)) == names, "every guide in the index's table, and no other"
    # The answers are in the teachers' folder, one section per guide, in the same order.
    titles = re.findall(r"^## (.+)$", ANSWERS.read_text("utf-8"), re.MULTILINE)
    assert titles == [path.read_text("utf-8").splitlines()[0][2:] for path in guides()]
    assert "<details>" not in index and "In short" not in index, "no answer in the index"


def guide_falls_behind(path: Path, code: Path = ROOT) -> list[str]:
    """What one guide lacks: its six parts in order, its answer in the teachers' folder,
    the lab commands for its change, a diff whose every hunk fits the code in ``code`` (the
    repository, or a copy of it), and words that name the lines it changes by their code,
    the same lines in its Chinese version."""
    text, number, wrong = path.read_text("utf-8"), path.stem[:2], []
    places = [text.find(heading + "\n") for heading in PARTS]
    if -1 in places or places != sorted(places):
        wrong.append(f"the parts {PARTS} are not all there, in order")
    # A fold hides nothing in a terminal: the answer is not in the guide at all.
    if "## What you see" in text or "## Why" in text or "<details>" in text:
        wrong.append("the answer is in the guide")
    if -1 not in places and "../teachers/labs.md" not in section(text, "## Afterwards"):
        wrong.append("Afterwards does not link ../teachers/labs.md")
    if -1 not in places and not commands(text):
        wrong.append("the Run section has no $PY command")
    told = answer(path.name)
    at = [told.find(part) for part in ANSWER_PARTS]
    if -1 in at or at != sorted(at):
        wrong.append(f"its answer in labs.md lacks {ANSWER_PARTS}, in order")
    elif len(told[at[0] : at[1]].removeprefix(ANSWER_PARTS[0]).split()) < 20:
        wrong.append("the short answer does not say what happens, in a few sentences")
    if -1 in places:
        return wrong
    if f"`nox -s exercise -- lab apply {number}`" not in section(text, "## Break it"):
        wrong.append(f"Break it does not name `nox -s exercise -- lab apply {number}`")
    undo = section(text, "## Undo")
    if f"nox -s exercise -- lab undo {number}" not in blocks(undo, "sh")[0]:
        wrong.append(f"Undo does not run `nox -s exercise -- lab undo {number}`")
    if "git status" not in undo:
        wrong.append("Undo does not check `git status`")
    diffs = blocks(text, "diff")
    changed = sorted({file for diff in diffs for file in parse_diff(diff)})
    if changed:  # by hand, a lab that edits the repository checks those files out again
        checkout = re.search(r"`git checkout ([^`]+)`", undo)
        if not (checkout and sorted(checkout[1].split()) == changed):
            wrong.append(f"Undo does not say `git checkout {' '.join(changed)}`")
    else:  # a lab that runs a script of its own runs it as a module of the repository
        saved = re.search(r"Save this script as\s+`(out/labs/\w+\.py)`", text)
        module = saved[1].removesuffix(".py").replace("/", ".") if saved else None
        if not module or not any(command[:2] == ["-m", module] for command in commands(text)):
            wrong.append("a lab with no diff says where to save its script and runs it")
    for diff in diffs:  # every hunk fits the code, inside the function its header names
        for file, hunks in parse_diff(diff).items():
            wrong += [f"{file}: {fault}" for fault in hunk_faults(code / file, hunks)]
    # The words point at the code by its own text ("the line `finally:`"), in both languages.
    kept = {
        line.strip()
        for diff in diffs
        for hs in parse_diff(diff).values()
        for h in hs
        for line in h.old
    }
    quoted = quoted_lines(section(text, "## Break it"), QUOTED_LINE)
    if diffs and not quoted:
        wrong.append("Break it names no line of the code it changes (the line `...`)")
    # A line named without its comment is named still: `yield from sock_connect(...)`.
    if missing := [q for q in quoted if not any(line.startswith(q) for line in kept)]:
        wrong.append(f"Break it quotes a line the diff does not hold: {missing}")
    chinese = path.with_name(path.stem + ".zh-CN.md")
    if chinese.exists():
        ours = quoted_lines(section(chinese.read_text("utf-8"), "## 破坏它"), QUOTED_LINE_ZH)
        if sorted(ours) != sorted(quoted):
            wrong.append(f"{chinese.name} quotes other lines: {ours} against {quoted}")
    return wrong


#: How a guide names a line of code by its text: "the line `finally:`", "`finally:` 这一行".
QUOTED_LINE = re.compile(r"\bthe\s+line\s+`([^`]+)`")
QUOTED_LINE_ZH = re.compile(r"`([^`]+)`\s*这一行")


def quoted_lines(text: str, quoted: re.Pattern[str]) -> list[str]:
    """The lines of code some words name by their text, a line broken in the page joined."""
    return [" ".join(found.split()) for found in quoted.findall(text)]


def hunk_faults(source: Path, hunks: list[Hunk]) -> list[str]:
    """What is wrong with a file's hunks: one that fits nowhere or in several places, or one
    whose header does not name the function (or ``imports``) that holds it."""
    lines = source.read_text("utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    defined = {
        name: node
        for name, node in qualified_names(tree.body)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    faults = []
    for hunk in hunks:
        try:
            at = locate(source.name, lines, hunk) + 1  # ast counts lines from 1
        except DiffMismatch as mismatch:
            faults.append(str(mismatch))
            continue
        # The lines it changes, with the kept line just before them (where an addition goes).
        kept = common_start(hunk.old, hunk.new)
        tail = common_start(hunk.old[kept:][::-1], hunk.new[kept:][::-1])
        first = at + kept - 1
        last = max(first, at + len(hunk.old) - tail - 1)
        if hunk.where == "imports":
            body = [
                n for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom | ast.Expr)
            ]
            if last >= body[0].lineno:
                faults.append(f"@@ imports @@ changes code past the imports, at {body[0].lineno}")
        elif hunk.where not in defined:
            faults.append(f"@@ {hunk.where} @@ names no function of {source.name}")
        elif (
            not defined[hunk.where].lineno <= first <= last <= (defined[hunk.where].end_lineno or 0)
        ):
            faults.append(f"@@ {hunk.where} @@ changes code outside {hunk.where}")
    return faults


def common_start(one: list[str], other: list[str]) -> int:
    """How many lines two lists of lines begin with in common."""
    pairs = zip(one, other, strict=False)
    return len(list(itertools.takewhile(lambda pair: pair[0] == pair[1], pairs)))


def qualified_names(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.stmt]]:
    """Every class and function of a module, by its dotted name: Crawler.work."""
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from qualified_names(node.body, f"{prefix}{node.name}.")


def test_every_guide_has_its_parts_its_answer_its_commands_and_a_diff_that_fits() -> None:
    assert len(guides()) >= 9
    behind = {path.stem: wrong for path in guides() if (wrong := guide_falls_behind(path))}
    assert not behind, f"guides that fall behind: {behind}"


def test_the_guide_check_sees_each_kind_of_fault(tmp_path: Path) -> None:
    """Each fault guide_falls_behind looks for, made in a copy of a guide, is named."""
    path = LABS / "01-forget-task-done.md"
    text = path.read_text("utf-8")
    faults = {
        "the parts": text.replace("## Predict\n", "## Guess\n"),
        "the answer is in the guide": text + "\n<details>\n",
        "Break it does not name": text.replace("lab apply 01`", "lab apply 1`"),
        "Undo does not say `git checkout": text.replace(
            "`git checkout stage2", "`git checkout stage1"
        ),
        "matches no place": text.replace(
            "-                self.q.task_done()", "-                self.q.task_done( )"
        ),
        "names no function": text.replace("@@ Crawler.work @@", "@@ Crawler.wrok @@"),
        "outside Crawler.fetch": text.replace("@@ Crawler.work @@", "@@ Crawler.fetch @@"),
        "quotes a line the diff does not hold": text.replace(
            "the line `self.q.task_done()`", "the line `self.q.done()`"
        ),
        "names no line of the code": text.replace("the line `", "`"),
    }
    copy = tmp_path / path.name  # the same name: its answer is still found by its title
    copy.write_text(text, "utf-8")
    chinese = tmp_path / "01-forget-task-done.zh-CN.md"
    translated = (LABS / chinese.name).read_text("utf-8")
    chinese.write_text(translated, "utf-8")
    assert guide_falls_behind(copy) == []
    for fault, broken in faults.items():
        assert broken != text, fault
        copy.write_text(broken, "utf-8")
        wrong = guide_falls_behind(copy)
        assert any(fault in line for line in wrong), (fault, wrong)
    copy.write_text(text, "utf-8")
    chinese.write_text(
        translated.replace("`self.q.task_done()` 这一行", "`self.q.done()` 这一行"), "utf-8"
    )
    assert [line for line in guide_falls_behind(copy) if "zh-CN.md quotes other lines" in line]


def test_lab_apply_then_undo_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    """Every lab: apply changes what the guide says, a second apply is refused, undo puts
    back every byte, and a second undo is refused (the command line's own round trip is
    tests/test_exercise_language.py's, and every lab test below applies through it)."""
    code = copy_of_the_code(tmp_path)
    behind = {}
    for path in guides():
        lab = find_lab(path.stem[:2])
        before = {f: (code / f).read_bytes() for f in lab.files() if (code / f).exists()}
        wrong = []
        if apply_lab(lab, code) != lab.files():
            wrong.append("apply names other files")
        wrong += [f"{f} unchanged" for f in lab.files() if (code / f).read_bytes() == before.get(f)]
        if lab.diff is not None:  # a script is just written again; a diff cannot apply twice
            with pytest.raises(LabError, match="is applied already"):
                apply_lab(lab, code)
        undo_lab(lab, code)
        after = {f: (code / f).read_bytes() for f in lab.files() if (code / f).exists()}
        if after != before:
            wrong.append("undo left a file changed")
        if lab.diff is not None:
            with pytest.raises(LabError, match="is not applied"):
                undo_lab(lab, code)
        if wrong:
            behind[path.stem] = wrong
    assert not behind, f"labs whose apply or undo falls behind: {behind}"


def test_lab_undo_keeps_windows_line_ends(tmp_path: Path) -> None:
    """A checkout with CRLF line ends (git on Windows) keeps them through apply and undo."""
    code = copy_of_the_code(tmp_path)
    file = code / "stage2_generators" / "crawler.py"
    crlf = file.read_bytes().replace(b"\n", b"\r\n")
    file.write_bytes(crlf)
    assert lab_tool(code, "apply", "1").returncode == 0
    assert b"\r\n" in file.read_bytes() and b"\n" not in file.read_bytes().replace(b"\r\n", b"")
    assert lab_tool(code, "undo", "1").returncode == 0
    assert file.read_bytes() == crlf


def test_lab_names_an_unknown_lab_and_lists_the_labs(tmp_path: Path) -> None:
    code = copy_of_the_code(tmp_path)
    wrong = lab_tool(code, "apply", "no-such-lab")
    assert wrong.returncode == 2
    assert "no lab named 'no-such-lab'" in wrong.stderr and "01-forget-task-done" in wrong.stderr
    listed = lab_tool(code, "list")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [g.stem for g in guides()]


def test_a_hunk_that_fits_nowhere_or_in_two_places_is_refused() -> None:
    """Found by its code, never by a guess: a hunk whose code was rewritten, or that could
    go in two places, is refused by name, and the file is left for the guide to follow."""
    diff = blocks(guide("02-forget-yield-from.md"), "diff")[0]
    ((path, hunks),) = parse_diff(diff).items()
    text = (ROOT / path).read_text("utf-8")
    assert "            sock_connect(plain, sockaddr)  # suspends" in apply_hunks(path, text, hunks)
    rewritten = text.replace(
        "yield from sock_connect(plain, sockaddr)", "yield from sock_connect(plain, addr)"
    )
    with pytest.raises(DiffMismatch, match=r"hunk in Crawler\.request matches no place"):
        apply_hunks(path, rewritten, hunks)
    twice = text + "\n".join(hunks[0].old) + "\n"
    with pytest.raises(DiffMismatch, match=r"hunk in Crawler\.request matches 2 places"):
        apply_hunks(path, twice, hunks)
    with pytest.raises(DiffMismatch, match=r"@@ x @@: a hunk starts and ends with a line it keeps"):
        parse_diff("+++ b/x.py\n@@ x @@\n-a\n+b\n c\n")


SHIFT = "# one line more, at the top of every stage module\n"


def test_a_stage_shifted_one_line_down_leaves_nothing_to_fix_by_hand(tmp_path: Path) -> None:
    """Every stage module one line longer at its top, in a copy.  The pages that point into
    the code still hold: every guide passes its checks, and every lab's apply makes the same
    change there, undone to the byte.  The one sample that names lines, the show page's
    tracebacks, falls behind, and its command writes it again: each frame in a stage one
    line further down, nothing else changed, in both languages."""
    code = copy_of_the_code(tmp_path)
    modules = [path for package in STAGES for path in (code / package).rglob("*.py")]
    assert len(modules) >= 15
    for module in modules:
        module.write_text(SHIFT + module.read_text("utf-8"), "utf-8")
    behind = {path.stem: wrong for path in guides() if (wrong := guide_falls_behind(path, code))}
    assert not behind, f"guides that fall behind the shifted code: {behind}"
    for path in guides():
        lab = find_lab(path.stem[:2])
        if lab.diff is None:
            continue
        before = {file: (code / file).read_text("utf-8") for file in lab.files()}
        apply_lab(lab, code)
        for file, hunks in parse_diff(lab.diff).items():
            unshifted = apply_hunks(file, (ROOT / file).read_text("utf-8"), hunks)
            assert (code / file).read_text("utf-8") == SHIFT + unshifted, (path.stem, file)
        undo_lab(lab, code)
        assert {file: (code / file).read_text("utf-8") for file in lab.files()} == before
    assert sorted(samples.write(code)) == sorted(samples.PAGES)  # both were behind

    def one_down(found: re.Match[str]) -> str:  # a stage's frame, one line further down
        number = int(found[2]) + (found[1].split("/")[0] in STAGES)
        return f'File "{found[1]}", line {number},'

    for page in samples.PAGES:
        frame = re.compile(r'File "([\w/.]+)", line (\d+),')
        expected = frame.sub(one_down, (ROOT / page).read_text("utf-8"))
        assert (code / page).read_text("utf-8") == expected, page


# --- lab 1: forget task_done() ------------------------------------------------------------


def test_lab1_without_task_done_the_crawl_waits_after_the_last_page(tmp_path: Path) -> None:
    command, code = lab_command("01-forget-task-done.md", tmp_path)
    site = six_pages()
    with serve(site) as base_url, processes() as start:
        expected = site.expected(base_url)
        run = start_crawl(start, command, base_url, tmp_path, code)

        def requested(trace: str) -> set[str]:  # the URLs of the steps taken inside a request
            return {s.url for s in steps(trace) if "fetch>request>" in s.what}

        # Wait until every URL was requested and then the trace has been still for a second.
        deadline = time.monotonic() + BOUND_S
        quiet_from, still_since = -1, time.monotonic()
        while time.monotonic() < deadline and run.proc.poll() is None:
            trace = run.stderr
            if len(trace) != quiet_from:
                quiet_from, still_since = len(trace), time.monotonic()
            elif time.monotonic() - still_since >= 1.0 and requested(trace) == expected.keys():
                break
            time.sleep(0.05)
        assert run.proc.poll() is None, "the crawl ended: is task_done() still called?"
        assert requested(run.stderr) == expected.keys(), run.stderr
        assert len(expected) == 7  # six pages and robots.txt
        assert time.monotonic() - still_since >= 1.0, "tasks still take steps"
        run.proc.send_signal(signal.SIGINT)
        assert run.wait() == 130
    woken = steps(run.stderr[quiet_from:])
    assert (woken[0].who, woken[0].what) == ("crawl", "crawl>join <- raise CancelledError")
    assert {s.what for s in woken if s.who.startswith("worker-")} == {
        "work>get <- raise CancelledError"
    }
    assert "-- interrupted" in run.stdout
    doc = run.doc()
    assert doc["interrupted"] is True
    records = run.records()
    assert records.keys() == expected.keys()  # every page, and robots.txt
    assert {url: r["status"] for url, r in records.items()} == {
        url: e.status for url, e in expected.items()
    }
    assert all(r["error"] is None for r in records.values()), "nothing was in flight"


# --- lab 2: forget yield from -------------------------------------------------------------


def test_lab2_without_yield_from_no_connection_is_ever_made(tmp_path: Path) -> None:
    command, code = lab_command("02-forget-yield-from.md", tmp_path)
    site = six_pages()
    with serve(site) as base_url, processes() as start:
        run = start_crawl(start, command, base_url, tmp_path, code)
        assert run.wait() == 0
        asked = dict(site.requests)
    assert asked == {}, "not one request reached the server"
    assert "Warning" not in run.stderr  # silent where the mistake is
    trace = steps(run.stderr)
    assert not [s for s in trace if "sock_connect" in s.what]
    # No try ever waits: sock_sendall's first send() fails at once. So no step pauses inside
    # request, and robots.txt's four tries all run in its task's one and only step.
    assert not [s for s in trace if "request>" in s.what]
    robots = [s for s in trace if s.url == base_url + "robots.txt"]
    assert [(s.who, s.what) for s in robots] == [("robots.txt", "fetch <- None")]
    records = run.records()
    assert records.keys() == {base_url, base_url + "robots.txt"}
    assert all((r["status"], r["tries"]) == (None, 4) for r in records.values())
    # The guide's question names the other `yield from` one could forget, in the same function.
    other = "chunk = yield from sock_recv(sock, 64 * 1024)"
    assert f"`{other}`" in " ".join(guide("02-forget-yield-from.md").split())
    source = (ROOT / "stage2_generators" / "crawler.py").read_text("utf-8")
    request = dict(qualified_names(ast.parse(source).body))["Crawler.request"]
    assert other in (ast.get_source_segment(source, request) or "")
    if sys.platform == "linux":  # elsewhere the send may fail with another OSError
        assert {r["error"] for r in records.values()} == {"BrokenPipeError: [Errno 32] Broken pipe"}
        assert "robots.txt error: BrokenPipeError: [Errno 32] Broken pipe (4 tries)" in run.stdout


def test_lab2_only_a_native_coroutine_is_missed_when_never_run() -> None:
    """The guide's comparison: Python warns of an `async def` never awaited, not of a generator."""

    async def connect() -> None:
        pass

    def sock_connect() -> Iterator[None]:
        yield

    with pytest.warns(RuntimeWarning, match="was never awaited"):
        connect()
        gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sock_connect()
        gc.collect()


# --- lab 3: block the loop ----------------------------------------------------------------

SLEEP_S = 0.3


def test_lab3_a_blocking_sleep_stalls_every_task(tmp_path: Path) -> None:
    text = guide("03-block-the-loop.md")
    broken_diff, cure_diff = blocks(text, "diff")
    assert f"time.sleep({SLEEP_S})" in broken_diff and f"sleep({SLEEP_S})" in cure_diff
    broken = applied_copy("03", tmp_path / "broken")
    assert (broken / "stage2_generators" / "crawler.py").read_text("utf-8") == apply_hunks(
        "crawler.py",
        (ROOT / "stage2_generators" / "crawler.py").read_text("utf-8"),
        parse_diff(broken_diff)["stage2_generators/crawler.py"],
    )
    cure = broken_copy(cure_diff, tmp_path / "cure")
    two_traced, ten_quiet = commands(text)
    assert "--trace" in two_traced and "--max-tasks" in ten_quiet
    pages = 6
    with serve(six_pages()) as base_url, processes() as start:
        runs = {
            "blocked, 2 tasks": start_crawl(start, two_traced, base_url, tmp_path / "b2", broken),
            "blocked, 10 tasks": start_crawl(start, ten_quiet, base_url, tmp_path / "b10", broken),
            "cured, 10 tasks": start_crawl(start, ten_quiet, base_url, tmp_path / "c10", cure),
            "unbroken, 2 tasks": start_crawl(start, two_traced, base_url, tmp_path / "u2", None),
        }
        for run in runs.values():
            assert run.wait() == 0, run.stderr
    docs = {name: run.doc() for name, run in runs.items()}
    for name, doc in docs.items():
        assert [f["status"] for f in doc["fetches"]] == [200] * pages, name
    elapsed = {name: doc["elapsed_s"] for name, doc in docs.items()}
    # The sleeps add up: at least 6 x 0.3 s, and five times the workers do not help.
    assert elapsed["blocked, 2 tasks"] >= pages * SLEEP_S * 0.99, elapsed
    assert elapsed["blocked, 10 tasks"] >= pages * SLEEP_S * 0.99, elapsed
    # Unbroken: a few hundredths of a second; orders of magnitude apart.
    assert elapsed["unbroken, 2 tasks"] < pages * SLEEP_S / 3, elapsed
    # The cure: the root's sleep, then its five links' sleeps together, about 0.6 s.
    assert 2 * SLEEP_S * 0.99 <= elapsed["cured, 10 tasks"] < pages * SLEEP_S * 2 / 3, elapsed
    # The trace: six holes of 0.3 s, each right after the step of a worker, the sleeper.
    trace = steps(runs["blocked, 2 tasks"].stderr)
    gaps = sorted(
        (
            (later.time - earlier.time, earlier, later)
            for earlier, later in itertools.pairwise(trace)
        ),
        key=lambda gap: gap[0],
        reverse=True,
    )[:pages]
    assert all(gap >= SLEEP_S * 0.99 for gap, _, _ in gaps), gaps
    assert all(before.who.startswith("worker-") for _, before, _ in gaps), gaps
    # The other worker, ready to go on before a hole, took its step only after it.
    assert any(
        after.who.startswith("worker-") and after.who != before.who for _, before, after in gaps
    ), gaps


# --- lab 4: raise in a callback -----------------------------------------------------------


def test_lab4_a_callback_traceback_starts_in_the_loop(tmp_path: Path) -> None:
    text = guide("04-raise-in-a-callback.md")
    (diff,) = blocks(text, "diff")
    assert set(parse_diff(diff)) == {"stage1_callbacks/crawler.py", "stage2_generators/crawler.py"}
    code = applied_copy("04", tmp_path / "code")
    stage1_command, stage2_command = commands(text)
    assert (stage1_command[1], stage2_command[1]) == ("stage1_callbacks", "stage2_generators")
    site = six_pages()
    with serve(site) as base_url, processes() as start:
        expected = site.expected(base_url)
        one = start_crawl(start, stage1_command, base_url, tmp_path / "1", code)
        two = start_crawl(start, stage2_command, base_url, tmp_path / "2", code)
        fail_on = [*crawl_argv(stage1_command, base_url), "--fail-on", "/p/3"]
        plain = start(fail_on, tmp_path / "fail-on")  # the repository's code, unchanged
        for run in (one, two, plain):
            assert run.wait() == 0, run.stderr
    broken = base_url + "p/3"
    for run in (one, two):  # the same record in both stages, and the crawl goes on
        records = run.records()
        assert records.keys() == expected.keys()
        record = records.pop(broken)
        assert (record["status"], record["tries"]) == (None, 1)
        assert record["error"] == f"RuntimeError: broken on purpose: {broken}"
        assert {url: r["status"] for url, r in records.items()} == {
            url: e.status for url, e in expected.items() if url != broken
        }
        assert f"{broken} error: RuntimeError: broken on purpose: {broken} (1 tries)" in run.stdout
    where = f"while fetching '{broken}'"
    assert frames(one.stderr, where) == ["_run", "_on_readable"]
    assert frames(two.stderr, where) == ["work", "fetch", "request"]
    assert frames(plain.stderr, where) == [
        "_run",
        "_on_readable",
        "_succeed",
        "record_response",
        "parse_links",
    ]


# --- lab 5: cancel one waiter -------------------------------------------------------------


def test_lab5_the_guides_script_prints_what_the_guide_says(tmp_path: Path) -> None:
    (output,) = blocks(answer("05-cancel-one-waiter.md"), "text")
    command, code = lab_command("05-cancel-one-waiter.md", tmp_path)
    with processes() as start:
        run = start(command, tmp_path / "run", code)
        assert run.wait() == 0, run.stderr
    assert run.stdout == output


def robots_waiters_test_site() -> Site:
    """A site whose answers take a second: robots.txt is still on its way when we cancel."""
    return Site(pages=10, traps=False, latency=1.0)


def test_lab5_cancelling_one_waiter_cancels_the_robots_fetch_and_the_other_worker() -> None:
    """Stage 2, in-process: cancel worker 1 the moment both workers wait on robots.txt."""
    site = robots_waiters_test_site()
    with serve(site) as base_url:
        robots_url = base_url + "robots.txt"
        crawler = Stage2Crawler([base_url, base_url + "p/1"], Options(max_tasks=2))
        loop = EventLoop()
        try:
            main = Task(crawler.crawl(), name="crawl")
            seen: dict[str, Any] = {}

            def cancel_when_both_wait() -> None:
                workers = main._coro.gi_frame.f_locals["workers"]
                robots = crawler.robots_tasks.get(robots_url)
                if robots is None or not all(w._fut_waiter is robots for w in workers):
                    loop.call_later(0.005, cancel_when_both_wait)  # not yet: look again soon
                    return
                seen.update(workers=workers, robots=robots)
                workers[1].cancel()

            loop.call_soon(cancel_when_both_wait)
            loop.call_later(BOUND_S, main.cancel)  # a hang would end as a failure, not stall
            loop.run_until_complete(main)
        finally:
            loop.close()
        asked = set(site.requests)
    result = crawler.result()
    assert seen, "both workers never waited on robots.txt together"
    assert seen["robots"].cancelled()
    assert [worker.cancelled() for worker in seen["workers"]] == [True, True]
    assert not result.interrupted and result.fetches == []
    assert list(crawler.in_flight) == [robots_url]
    assert result.elapsed_s < robots_waiters_test_site().latency  # before robots.txt came in
    assert not asked & {"/", "/p/1"}, "no page was ever requested"


def test_lab5_stage3_does_the_same() -> None:
    """Stage 3, in-process: asyncio's Task.cancel also cancels the task a worker awaits."""
    site = robots_waiters_test_site()
    with serve(site) as base_url:
        robots_url = base_url + "robots.txt"
        crawler = stage3.Crawler([base_url, base_url + "p/1"], Options(max_tasks=2))

        async def main() -> tuple[list[asyncio.Task[Any]], asyncio.Task[None]]:
            crawl = asyncio.create_task(crawler.crawl())

            def waiting_on_robots(task: asyncio.Task[Any]) -> bool:
                names, _url = coroutine_chain(task.get_coro())  # work>robots: paused there
                return names[-1:] == ["robots"]

            while True:
                workers = [t for t in asyncio.all_tasks() if t.get_name().startswith("worker-")]
                if len(workers) == 2 and all(waiting_on_robots(w) for w in workers):
                    break
                await asyncio.sleep(0.005)
            robots = crawler.robots_tasks[robots_url]
            next(w for w in workers if w.get_name() == "worker-1").cancel()
            await asyncio.wait_for(crawl, BOUND_S)  # the crawl ends on its own, no error
            return workers, robots

        workers, robots = asyncio.run(main())
    result = crawler.result()
    assert robots.cancelled()
    assert all(worker.cancelled() for worker in workers)
    assert not result.interrupted and result.fetches == []
    assert list(crawler.in_flight) == [robots_url]
    assert result.elapsed_s < site.latency


# --- lab 6: a Future nobody resolves ------------------------------------------------------


def test_lab6_the_bare_loop_sees_the_deadlock_and_a_watched_socket_hides_it(
    tmp_path: Path,
) -> None:
    lab = "06-a-future-nobody-resolves.md"
    with command_and_variant(lab, "--watch-a-socket", tmp_path) as (bare, watched):
        assert bare.wait() == 1
        time.sleep(1.5)  # time to start and reach select(), which then never returns
        assert watched.proc.poll() is None, watched.stderr
        watched.proc.send_signal(signal.SIGINT)
        assert watched.wait() == -signal.SIGINT  # what a shell shows as 130
    last = bare.stderr.strip().splitlines()[-1]
    assert last == "RuntimeError: deadlock: no callback, timer or socket can ever wake the loop"
    assert frames(bare.stderr, "Traceback")[-1] == "run_once"
    assert watched.stderr.strip().splitlines()[-1] == "KeyboardInterrupt"
    names = frames(watched.stderr, "Traceback")
    assert "run_once" in names and names[-1] == "select"


def test_lab6_in_process_the_deadlock_is_raised_at_once() -> None:
    def wait_forever() -> Iterator[Future[None]]:
        yield from Future()

    loop = EventLoop()
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r"^deadlock: no callback, timer or socket"):
            loop.run_until_complete(wait_forever())
        # Without the check the loop would wait forever: any bound tells at once from never.
        assert time.monotonic() - started < 10
    finally:
        loop.close()


# --- lab 7: read without waiting ----------------------------------------------------------


def test_lab7_a_coroutine_that_never_waits_holds_the_loop_until_the_site_lets_go(
    tmp_path: Path,
) -> None:
    text = guide("07-read-without-waiting.md")
    (diff,) = blocks(text, "diff")
    code = broken_copy(diff, tmp_path / "code")
    site_command, crawl_command = commands(text)
    # The guide's site, built from its own command line; served here on a free port.
    assert site_command[:2] == ["-m", "shared.testsite"]
    parser = argparse.ArgumentParser()
    add_site_arguments(parser, port=0)
    args = parser.parse_args(site_command[2:])
    site = site_from_arguments(args)
    bound = site.endless_s
    assert site.endless and bound is not None
    assert crawl_command[:3] == ["-m", "stage2_generators", f"http://127.0.0.1:{args.port}/"]
    timeout = float(crawl_command[crawl_command.index("--timeout") + 1])
    floods = ("interim-flood", "tiny-chunks")
    runs = {}
    # The two crawls at once, each on a site of its own: the broken one takes the site's
    # whole bound, during which the unbroken one is done.
    unbroken_site = site_from_arguments(args)
    with serve(site) as base_url, serve(unbroken_site) as unbroken_url, processes() as start:
        for name, copy, url in (("broken", code, base_url), ("unbroken", None, unbroken_url)):
            workdir = tmp_path / name
            argv = ["-m", "stage2_generators", url, *crawl_command[3:]]
            runs[name] = start([*argv, "--json", str(workdir / "crawl.json")], workdir, copy)
        for run in runs.values():
            assert run.wait() == 0, run.stderr
    flood_urls = {base_url + "endless/" + flood for flood in floods}
    pages = {base_url + f"p/{n}" for n in range(1, 6)}

    def gaps(run: Run) -> list[tuple[float, Step]]:
        trace = steps(run.stderr)
        return sorted(
            ((later.time - earlier.time, earlier) for earlier, later in itertools.pairwise(trace)),
            key=lambda gap: gap[0],
        )

    # Unbroken: both floods time out at 2 s, every page is in, the trace never pauses.
    unbroken = {
        base_url + url.removeprefix(unbroken_url): record
        for url, record in runs["unbroken"].records().items()
    }
    for url in flood_urls:
        assert unbroken[url]["error"] == f"TimeoutError: timed out after {timeout} s", unbroken[url]
    assert all(unbroken[url]["status"] == 200 for url in pages)
    assert runs["unbroken"].doc()["elapsed_s"] < bound
    assert gaps(runs["unbroken"])[-1][0] < timeout
    # Broken: as long as the site pours, and in the trace one silence that long, right
    # after a step of a flood's task: the step that never ended while the flood poured.
    assert runs["broken"].doc()["elapsed_s"] >= bound
    silence, before = gaps(runs["broken"])[-1]
    assert silence >= bound - 1, (silence, before)
    assert before.url in flood_urls and ">request>sock_" in before.what, before
    broken = runs["broken"].records()
    # The flood that held the loop ends with the site's hang-up, never its own timeout.
    assert broken[before.url]["error"].startswith(
        "WireError: connection closed before the response was complete"
    ), broken[before.url]


# --- lab 8: a crawl that hangs, and where every task waits --------------------------------


@pytest.mark.parametrize("package", ["stage2_generators", "stage3_asyncio"])
def test_lab8_the_tree_says_robots_txt_waits_to_read_and_worker0_waits_for_it(
    package: str, tmp_path: Path
) -> None:
    """The guide's silent server and crawl: SIGUSR1, then Ctrl-C with -v, print the tree."""
    text = guide("08-where-every-task-waits.md")
    (script,) = blocks(text, "python")
    server_cmd, crawl_cmd = commands(text)
    assert server_cmd[:2] == ["-m", "out.labs.silent"] and server_cmd[-1] == "&"
    assert crawl_cmd[:2] == ["-m", "stage2_generators"]
    assert "-v" in crawl_cmd and "--timeout" in crawl_cmd
    path = tmp_path / "silent.py"
    path.write_text(script, "utf-8")
    with processes() as start:
        server = start([str(path), "0"], tmp_path / "server")  # any free port, not 8007
        deadline = time.monotonic() + BOUND_S
        while not server.stdout and time.monotonic() < deadline:
            time.sleep(0.05)
        url = server.stdout.split()[0]
        args = [url if arg.startswith("http://") else arg for arg in crawl_cmd[2:]]
        crawl = start(["-m", package, *args], tmp_path / "crawl")
        # Before its handler is in, SIGUSR1 would end the crawl: wait for it (stage 3 imports
        # aiohttp first, which takes seconds on a busy machine), then for the request to go.
        while not catches(crawl.proc.pid, signal.SIGUSR1) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # time to connect, send the request and wait
        crawl.proc.send_signal(signal.SIGUSR1)
        while crawl.stderr.count("--- tasks ---") < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert crawl.proc.poll() is None, crawl.stderr  # still hanging, still there
        crawl.proc.send_signal(signal.SIGINT)
        assert crawl.wait() == 130
    trees = crawl.stderr.split("--- tasks ---")[1:]
    assert len(trees) == 2, crawl.stderr  # one asked for, one at Ctrl-C with -v
    for tree in trees:  # one tree from the main task down (shared/tools/instruments/tasktree.py)
        assert tree.lstrip("\n").startswith("└── (T) crawl  id=0x"), tree
        worker0 = tree[tree.index("── (T) worker-0 ") : tree.index("── (T) worker-1 ")]
        stack, robots = worker0.split("── (T) robots.txt ")
        assert "Crawler.robots()" in stack  # worker-0 waits for robots.txt, in robots()
        assert "Crawler.request()" in robots and "Crawler.fetch()" in robots
        if package == "stage2_generators":
            assert "sock_recv()" in robots  # the answer's first byte, which never comes
        idle = tree[tree.index("── (T) worker-1 ") :]
        assert "Queue.get()" in idle


def catches(pid: int, signum: int) -> bool:
    """Whether a process has a handler for a signal (its SigCgt mask, on Linux); elsewhere,
    True once two seconds have passed since this was first asked."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        time.sleep(2.0)
        return True
    (mask,) = re.findall(r"^SigCgt:\s*([0-9a-f]+)$", status.read_text(), re.MULTILINE)
    return bool(int(mask, 16) >> (signum - 1) & 1)


# --- lab 9: await asyncio's sleep on our loop ---------------------------------------------


def test_lab9_our_task_refuses_asyncios_bare_yield_and_asyncio_finds_no_loop(
    tmp_path: Path,
) -> None:
    with command_and_variant("09-await-asyncio-on-our-loop.md", "0.5", tmp_path) as (ours, theirs):
        assert ours.wait() == 1, ours.stderr
        assert theirs.wait() == 1, theirs.stderr
    assert ours.stdout == "" and theirs.stdout == "", "neither run may print `slept ...`"
    # sleep(0): asyncio yields a bare None, and our Task throws its error in at that yield.
    assert ours.stderr.strip().splitlines()[-1] == (
        "RuntimeError: a task may only yield Futures, not None"
    )
    names = frames(ours.stderr, "Traceback")
    assert names[-3:] == ["nap", "sleep", "__sleep0"], names
    assert "_step" in names
    # sleep(0.5): asyncio asks for its own running loop before it yields anything.
    assert theirs.stderr.strip().splitlines()[-1] == "RuntimeError: no running event loop"
    assert frames(theirs.stderr, "Traceback")[-2:] == ["nap", "sleep"]


def test_lab9_in_process_the_foreign_task_fails_and_a_neighbour_goes_on() -> None:
    async def nap() -> str:
        await asyncio.sleep(0)
        return "slept"

    def neighbour() -> Iterator[Future[None]]:
        yield from sleep(0.01)
        return "done"

    loop = EventLoop()
    try:
        foreign, other = Task(nap()), Task(neighbour())
        with pytest.raises(RuntimeError, match=r"^a task may only yield Futures, not None$"):
            loop.run_until_complete(foreign)
        assert foreign.done() and not foreign.cancelled()  # settled, not left half-run
        assert loop.run_until_complete(other) == "done"
    finally:
        loop.close()
