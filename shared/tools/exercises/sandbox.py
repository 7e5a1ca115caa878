"""Where a student's code runs when `grade` judges it, and how all of it is ended.

Three layers, each with what it guarantees (GRADING.md says the same for teachers):

- Everywhere: the check starts in an empty folder of its own, with a scrubbed
  environment, in a session (a process group) of its own, and when it ends, normally or
  on time, the whole group is killed before its output is read to the end.
- On Linux, the grading process is also a "subreaper" (prctl PR_SET_CHILD_SUBREAPER): a
  process that leaves the check's session and its parent (a daemon's double fork) is
  handed to the grader instead of to init, so it is found and killed too.  Nothing a
  check started outlives it to write into the next folder's copy.
- Where bubblewrap runs (Linux, `bwrap` from the distribution's packages), the check runs
  inside it: new namespaces for processes, network (loopback alone), IPC and host name; a
  file system of the system's own folders read-only, the base Python, the packages'
  folder, and the scratch folder, nothing else of the teacher's (no clone, no home).
  Its processes see no process outside, and all of them die with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

#: The system's folders the sandbox shows read-only, where they exist.
SYSTEM = ("/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/opt")


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux); say if it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children() -> dict[int, list[int]]:
    """Every process's children, by parent, as /proc tells (Linux; empty elsewhere)."""
    found: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return found
    for entry in entries:
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        parent = int(stat.rpartition(")")[2].split()[1])  # the name may hold spaces
        found.setdefault(parent, []).append(int(entry))
    return found


def descendants(roots: Iterable[int]) -> set[int]:
    """The processes below ``roots``, at any depth (Linux)."""
    tree = children()
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        for child in tree.get(pid, []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def end_all(proc: subprocess.Popen[str], before: set[int]) -> None:
    """Kill the check's process group, and every process below it or handed to this one
    since the check began (not in ``before``, this process's children then)."""
    if os.name != "posix":
        proc.kill()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):  # empty already
        os.killpg(proc.pid, signal.SIGKILL)
    mine = set(children().get(os.getpid(), [])) - before - {proc.pid}
    for pid in descendants([proc.pid, *mine]) | mine:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    for pid in mine:  # handed to us as a subreaper: ours to reap
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


@functools.cache
def bubblewrap() -> str | None:
    """The path of a bubblewrap that runs here (tried once), or None."""
    found = shutil.which("bwrap")
    if found is None or not sys.platform.startswith("linux"):
        return None
    probe = [found, *isolation(), *binds((), ()), "--", "/bin/true"]
    try:
        ran = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if ran.returncode == 0 else None


def isolation() -> list[str]:
    """bubblewrap's options for new namespaces that end with the grader."""
    return ["--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc"]


def binds(read_only: Iterable[Path], writable: Iterable[Path]) -> list[str]:
    """bubblewrap's options for the file system: the system's folders and ``read_only``
    read-only, an empty /tmp, then ``writable`` (which may lie in /tmp)."""
    options = ["--dev", "/dev", "--tmpfs", "/tmp"]
    for folder in SYSTEM:
        if os.path.islink(folder):  # /bin -> usr/bin on a merged /usr
            options += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            options += ["--ro-bind", folder, folder]
    for path in read_only:
        options += ["--ro-bind", str(path), str(path)]
    for path in writable:
        options += ["--bind", str(path), str(path)]
    return options


def wrap(
    argv: list[str], read_only: Iterable[Path], writable: Iterable[Path], cwd: Path
) -> list[str]:
    """``argv`` run inside bubblewrap, seeing only what ``read_only`` and ``writable`` name
    beside the system's folders; or ``argv`` itself where bubblewrap does not run."""
    found = bubblewrap()
    if found is None:
        return argv
    files = binds(read_only, writable)
    return [found, *isolation(), *files, "--chdir", str(cwd), "--", *argv]
