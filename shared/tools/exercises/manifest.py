"""The files that judge a workspace, their hashes, and what a student changed among them.

A check must judge the student's code, never the student's copy of the tests.  So
`start` writes a manifest, `.exercise-hashes.json`, with the SHA-256 of every file that
judges the exercise: the test module, its support files, the conftest files, the
pytest settings (pyproject.toml) and the test site with its oracle.  `check` then

- reports each of them that was changed or removed, and each file added beside them
  (a new test module, a conftest.py), and refuses to score such a workspace;
- runs the tests in a copy of the code into which those files are put as they should
  be: from the repository when the tool runs from it, or from the workspace itself
  when the tool runs in a handout (where they were just found equal to the manifest).

A handout adds its own files to the manifest: the tool, the workflow, requirements.txt;
and, under `code`, the outline of the student's own files and what the reference
solutions use, so that `check` judges those files as code there too (studentfile.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from shared.tools.exercises.catalog import ROOT, Exercise
from shared.tools.exercises.messages import say

MANIFEST = ".exercise-hashes.json"
JUDGING = (
    "pyproject.toml",
    "tests/conftest.py",
    "tests/exercises/conftest.py",
    "tests/exercises/reasons.py",  # the tests' sentences, in every language
    "tests/exercises/reasons.toml",
)
TESTSITE = "shared/testsite"  # the site the crawls run against, and the oracle that judges them
#: Where a file added by a student could take part in judging: nothing new belongs there.
WATCHED = ("tests", TESTSITE)
CACHES = ("__pycache__", ".pytest_cache")


#: The most a marker or a manifest may hold: a few kilobytes are written; more is no ours.
MAX_SMALL = 1024 * 1024


def small_text(path: Path, limit: int = MAX_SMALL) -> str:
    """The text of a small plain file; OSError for anything else (a link, a pipe, a device,
    an empty file as /proc's are, a file over ``limit`` bytes), UnicodeDecodeError (a
    ValueError) for bytes that are not UTF-8: a student's folder may hold a trap where
    its marker or manifest should be."""
    import os
    import stat

    # Not a link (/proc/kmsg behind one blocks a reader for ever), opened without waiting,
    # checked again once open, and read no further than the limit.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    if path.is_symlink():
        raise OSError(f"{path.name}: a link")
    descriptor = os.open(path, flags)
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or not 0 < status.st_size <= limit:
            raise OSError(f"{path.name}: not a small plain file")
        return file.read(limit + 1).decode("utf-8")


def digest(data: bytes) -> str:
    """The SHA-256 of a file's bytes, its line ends made \\n first.

    A clone on Windows may turn \\n into \\r\\n (git's autocrlf): that is no change.
    """
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()


def _files_under(root: Path, folder: str) -> list[str]:
    """Every file under ``root/folder``, relative to ``root``, caches left out."""
    found = []
    for path in (root / folder).rglob("*"):
        relative = path.relative_to(root)
        if path.is_file() and not set(relative.parts) & set(CACHES) and path.suffix != ".pyc":
            found.append(relative.as_posix())
    return sorted(found)


def judging_files(exercise: Exercise, root: Path = ROOT) -> list[str]:
    """The files that judge the exercise, as ``root`` (the repository) has them."""
    return [*JUDGING, exercise.tests, *exercise.support, *_files_under(root, TESTSITE)]


def hashes(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """The digest of each of ``paths`` under ``root``."""
    return {path: digest((root / path).read_bytes()) for path in paths}


def write(folder: Path, files: Mapping[str, str], code: Mapping[str, Any] | None = None) -> None:
    """Write the manifest: the digest of each protected file, by path, and in a handout
    ``code``, what judging the student's own files needs (studentfile.facts)."""
    data: dict[str, Any] = {"files": dict(sorted(files.items()))}
    if code is not None:
        data["code"] = dict(code)
    (folder / MANIFEST).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_code(folder: Path) -> Any:
    """What the manifest keeps for judging the student's own files, or None."""
    try:
        data = json.loads(small_text(folder / MANIFEST))
    except (OSError, ValueError):
        return None
    return data.get("code") if isinstance(data, dict) else None


def read(folder: Path) -> dict[str, str] | None:
    """The manifest's digests by path, or None if there is no manifest that can be read."""
    try:
        data = json.loads(small_text(folder / MANIFEST))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return files


def tampered(folder: Path, expected: Mapping[str, set[str]], watched: Iterable[str]) -> list[str]:
    """What was done to the protected files: one line per file, naming it.

    ``expected`` gives, for each protected path, the digests it may have (the manifest's,
    and the repository's when the repository's tests moved on since `start`).
    ``watched`` are the folders where any other file counts as added.
    """
    found = []
    for path, allowed in sorted(expected.items()):
        file = folder / path
        if not file.is_file():
            found.append(say("en", "file.removed", path=path))
        elif digest(file.read_bytes()) not in allowed:
            found.append(say("en", "file.changed", path=path))
    for where in watched:
        if (folder / where).is_dir():
            added = [p for p in _files_under(folder, where) if p not in expected]
            found += [say("en", "file.added", path=path) for path in added]
    return found


def expected_digests(
    exercise: Exercise,
    folder: Path,
    pristine: Path | None,
    extra: Mapping[str, str] | None = None,
) -> tuple[dict[str, set[str]], list[str]]:
    """The digests each protected file of ``folder`` may have, and what makes that unknowable.

    ``pristine`` is the repository, when the tool runs from one: its files count, with the
    manifest's.  In a handout (``pristine`` None) the manifest alone decides.  ``extra``
    are the digests of a handout's own files, as the repository would make them now.
    """
    recorded = read(folder)
    problems = []
    if recorded is None:
        if pristine is None:  # with the repository at hand, its files decide without it
            problems.append(say("en", "file.no-manifest", path=MANIFEST))
        recorded = {}
    expected: dict[str, set[str]] = {path: {value} for path, value in recorded.items()}
    if pristine is not None:
        repository = hashes(pristine, judging_files(exercise, pristine))
        for path, value in [*repository.items(), *(extra or {}).items()]:
            expected.setdefault(path, set()).add(value)
    return expected, problems
