"""Workspaces: a copy of the code with an exercise's functions emptied, and what `solve` does to it.

A workspace holds the crawlers' code (shared/ and the three stages), pyproject.toml
(pytest's settings), the tests that judge the exercise with the conftest files they
rely on, the exercise's README as INSTRUCTIONS.md (its README.zh-CN.md, for Chinese), a
marker file, `.exercise.json`, that names the exercise, counts the hints shown, keeps
the language `start` chose and whether each task passed at the last check, and the
manifest of the files that judge the exercise (manifest.py).  The reference solution is
never copied: `solve` takes it from the repository's files when asked.
"""

from __future__ import annotations

import difflib
import json
import shutil
from pathlib import Path
from typing import Any

from shared import STAGES
from shared.tools.exercises import answers, manifest
from shared.tools.exercises.bodies import BodyError, empty_functions, put_bodies
from shared.tools.exercises.catalog import ROOT, Exercise
from shared.tools.exercises.messages import say
from shared.tools.language import LANGUAGES

MARKER = ".exercise.json"
PACKAGES = ("shared", *STAGES.values())
SHARED_FILES = manifest.JUDGING  # pytest's settings, the conftest files, the tests' sentences
BACKUP = ".before-solve"  # where solve keeps the files it changed, as they were
#: Where workspaces go by default, and the hint counts of exercises without one.
OUT = ROOT / "out" / "exercises"
HINTS = ".hints.json"
#: A Chinese README says its English one is beside it; in a workspace it is not.
ORIGINAL_BESIDE = "英文原文在同一目录的 `README.md` 中"
ORIGINAL_AT = "英文原文在课程仓库的 `shared/tools/exercises/{name}/README.md` 中"


class WorkspaceError(Exception):
    """A folder that cannot be, or is not, the workspace asked for."""


def in_handout() -> bool:
    """Whether this tool runs inside a handout, which is itself the workspace."""
    return read_marker(ROOT) is not None


def default_workspace(name: str) -> Path:
    """Where `start NAME` puts the workspace when not told otherwise; a handout is its own."""
    return ROOT if in_handout() else OUT / name


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of the workspace in ``folder``, or None if it is not a workspace."""
    try:
        data = json.loads(manifest.small_text(folder / MARKER))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("exercise"), str) else None


def write_marker(folder: Path, data: dict[str, Any]) -> None:
    """Write the workspace's marker file."""
    (folder / MARKER).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def stub_message(exercise: Exercise, qualname: str) -> str:
    """The NotImplementedError message an emptied function raises."""
    return say("en", "stub.write", name=exercise.name, function=qualname)


def emptied(exercise: Exercise) -> dict[str, str]:
    """The new text of each file the exercise changes, by path: its functions emptied.

    Raises BodyError (or SyntaxError) if the exercise names a function that the
    repository's code does not define, before anything is copied.
    """
    by_file: dict[str, list[str]] = {}
    for target in exercise.replace:
        by_file.setdefault(target.path, []).append(target.qualname)
    texts = {}
    for path, names in by_file.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        messages = {name: stub_message(exercise, name) for name in names}
        try:
            texts[path] = empty_functions(text, names, messages)
        except BodyError as error:
            raise BodyError(f"exercise {exercise.name}: {path}: {error}") from None
    return texts


def _ignore(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: caches, and the exercises themselves (hints, this tool)."""
    left_out = {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}
    if Path(folder).resolve() == ROOT / "shared" / "tools":
        left_out.add("exercises")
    return left_out


def instructions(exercise: Exercise, lang: str) -> str:
    """The text of the workspace's INSTRUCTIONS.md in ``lang``."""
    path = exercise.instructions_in(lang)
    if not path.is_file():
        raise WorkspaceError(f"{exercise.name} has no instructions in {lang}: no {path.name}")
    text = path.read_text(encoding="utf-8")
    return text.replace(ORIGINAL_BESIDE, ORIGINAL_AT.format(name=exercise.name), 1)


def language(folder: Path) -> str | None:
    """The language the workspace in ``folder`` was started in, if it is one that says."""
    lang = (read_marker(folder) or {}).get("lang")
    return lang if lang in LANGUAGES else None


def start(exercise: Exercise, folder: Path, force: bool = False, lang: str = "en") -> Path:
    """Make the exercise's workspace in ``folder``, its instructions in ``lang``; return it.

    An existing workspace is replaced only with ``force``; a folder that holds
    anything else is never touched.
    """
    folder = folder.resolve()
    texts = emptied(exercise)  # first: a broken exercise leaves no half-made workspace
    guide = instructions(exercise, lang)
    if folder.exists():
        if read_marker(folder) is not None:
            if not force:
                raise WorkspaceError(say("en", "error.exists", folder=folder))
            shutil.rmtree(folder)
        elif not folder.is_dir() or any(folder.iterdir()):
            raise WorkspaceError(say("en", "error.not-empty", folder=folder))
    folder.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, folder / package, ignore=_ignore, dirs_exist_ok=True)
    for path in [*SHARED_FILES, exercise.tests, *exercise.support]:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / path, folder / path)
    for path, text in texts.items():
        (folder / path).write_bytes(text.encode("utf-8"))
    if lang == "en":  # byte for byte, line ends and all
        shutil.copyfile(exercise.instructions, folder / "INSTRUCTIONS.md")
    else:
        (folder / "INSTRUCTIONS.md").write_bytes(guide.encode("utf-8"))
    write_marker(folder, {"exercise": exercise.name, "hints_shown": 0, "lang": lang})
    # The manifest: what the files that judge the exercise are, so that a change shows.
    manifest.write(folder, manifest.hashes(ROOT, manifest.judging_files(exercise)))
    return folder


def require_workspace(exercise: Exercise, folder: Path, how_to_start: str) -> None:
    """Raise WorkspaceError, saying what to run first, unless ``folder`` is the exercise's."""
    marker = read_marker(folder)
    if marker is None:
        raise WorkspaceError(
            say("en", "error.not-a-workspace", folder=folder, command=how_to_start)
        )
    if marker["exercise"] != exercise.name:
        other = marker["exercise"]
        raise WorkspaceError(
            say(
                "en",
                "error.other-workspace",
                folder=folder,
                other=other,
                name=exercise.name,
                command=how_to_start,
            )
        )


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"  # so the diff's last line does not run into the next header
    return lines


def solve(exercise: Exercise, folder: Path, task: int | None = None) -> tuple[str, list[str]]:
    """Put the reference bodies into the workspace; return a unified diff and notes.

    Only the exercise's functions change, and each takes the body it has in the
    repository's current file; with ``task``, only that task's functions, as that task
    leaves them (teachers/exercises/NAME.toml says which, see answers.py).  A file the
    workspace can no longer parse (or in which a function has gone) is replaced whole
    by the repository's, and a note says so.  Every changed file is first saved under
    .before-solve/.
    """
    by_file: dict[str, dict[str, str]] = {}
    for target, text in answers.load(exercise).bodies(task).items():
        by_file.setdefault(target.path, {})[target.qualname] = text
    diffs: list[str] = []
    notes: list[str] = []
    for path, bodies in by_file.items():
        reference = (ROOT / path).read_text(encoding="utf-8")
        mine = folder / path
        before = mine.read_text(encoding="utf-8") if mine.exists() else ""
        try:
            after = put_bodies(before, bodies)
        except (SyntaxError, BodyError) as error:
            notes.append(f"{path}: {error}; the repository's whole file replaces it")
            after = reference
        if after == before:
            continue
        if mine.exists():
            backup = folder / BACKUP / path
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mine, backup)
        mine.write_bytes(after.encode("utf-8"))
        diff = difflib.unified_diff(_lines(before), _lines(after), f"a/{path}", f"b/{path}")
        diffs.append("".join(diff))
    return "".join(diffs), notes


def _own_marker(exercise: Exercise, folder: Path) -> dict[str, Any] | None:
    """The marker in ``folder`` if it is a workspace of ``exercise``."""
    marker = read_marker(folder)
    return marker if marker is not None and marker["exercise"] == exercise.name else None


def hints_seen(exercise: Exercise, folder: Path | None = None) -> set[int]:
    """The hints shown so far, by index: those the workspace's marker in ``folder`` (by
    default, the default workspace) counts, or else out/exercises/.hints.json.

    The marker's `hints_shown` counts them; while they were shown in their order that is
    all it holds.  Once `hint` picked one out of order (the first failing task's), the
    marker lists them too, in `hints_seen`.
    """
    marker = _own_marker(exercise, folder or default_workspace(exercise.name))
    if marker is None:
        count = _hints_file().get(exercise.name, 0)
        return set(range(count)) if isinstance(count, int) else set()
    listed = marker.get("hints_seen")
    if isinstance(listed, list) and all(isinstance(n, int) for n in listed):
        return set(listed)
    count = marker.get("hints_shown", 0)
    return set(range(count)) if isinstance(count, int) else set()


def see_hint(exercise: Exercise, index: int, folder: Path | None = None) -> None:
    """Remember that hint ``index`` was shown: in the workspace's marker, or else in
    out/exercises/.hints.json (where, with no check to pick a task, they come in order)."""
    seen = hints_seen(exercise, folder) | {index}
    folder = folder or default_workspace(exercise.name)
    marker = _own_marker(exercise, folder)
    if marker is not None:
        kept = {k: v for k, v in marker.items() if k != "hints_seen"}
        in_order = seen == set(range(len(seen)))
        extra = {} if in_order else {"hints_seen": sorted(seen)}
        write_marker(folder, {**kept, "hints_shown": len(seen), **extra})
        return
    counts = _hints_file()
    counts[exercise.name] = len(seen)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / HINTS).write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")


def remember_verdicts(exercise: Exercise, folder: Path, verdicts: dict[int, bool]) -> None:
    """Keep in the workspace's marker whether each task passed at its last check, for
    `hint` to find the first that fails.  A check of one task (`--task N`) updates that
    task's verdict alone."""
    marker = _own_marker(exercise, folder)
    if marker is None:
        return
    kept = _verdicts(marker)
    kept.update(verdicts)
    table = {str(task): passed for task, passed in sorted(kept.items())}
    write_marker(folder, {**marker, "passed": table})


def last_verdicts(exercise: Exercise, folder: Path | None = None) -> dict[int, bool]:
    """Whether each task passed at the workspace's last check ({} before the first)."""
    marker = _own_marker(exercise, folder or default_workspace(exercise.name))
    return {} if marker is None else _verdicts(marker)


def _verdicts(marker: dict[str, Any]) -> dict[int, bool]:
    table = marker.get("passed")
    if not isinstance(table, dict):
        return {}
    return {int(k): v for k, v in table.items() if k.isdigit() and isinstance(v, bool)}


def _hints_file() -> dict[str, Any]:
    try:
        data = json.loads((OUT / HINTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
