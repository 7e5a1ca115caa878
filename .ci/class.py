"""CI: a class's commands in a fresh copy of the repository, as a student's laptop runs them.

1. Old Python: nox on Python 3.10 either stops within 5 s with one sentence (no 3.11+
   on PATH) or says which 3.11+ it found and crawls with it.
2. Offline: after `nox -s setup`, every command of the README that crawls, traces,
   shows, diffs, compares or checks an exercise succeeds with pip's index switched off
   (PIP_NO_INDEX=1, no find-links, no pip configuration file), and leaves the copied
   files as they were.
3. Wheelhouse: `nox -s wheelhouse -- DIR` fills DIR for every system and Python; a new
   copy installs nox and the class's environment from it with no index at all; and a
   handout of s2-future, set up by its own README's commands (the offline install from
   DIR), checks with no index: every task failed, unsolved; and so it does on another
   Python than the one that made it (3.13 or 3.12, where the machine has one).
4. Pip only: the README's route without pipx, its Linux block as written, from a fresh
   copy: a .venv made by the machine's python3, nox installed into it by pip, a crawl.
   After the wheelhouse part, pip installs from that folder with no index (and setup
   fills the class's environment from it), as a room without network would; run alone,
   it uses the index, as old-python does.

Run by .ci/run as `python3 .ci/class.py`; needs nox in the Python that runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from hashlib import sha256
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOX = [sys.executable, "-m", "nox"]

# Each README command that crawls, traces, shows, diffs, compares or checks an exercise,
# with the exit status it gives when all is well (a check of an exercise not yet done
# says so with 1).  tests/test_setup.py holds this list to every class session.
OFFLINE_COMMANDS: list[tuple[list[str], int]] = [
    (["-s", "stage1", "--", "--site-pages", "6", "-q"], 0),
    (["-s", "stage2", "--", "--site-pages", "6", "-q"], 0),
    (["-s", "stage3", "--", "--site-pages", "6", "-q"], 0),
    (["-s", "stage3"], 0),
    (["-s", "stage1", "--", "--fail-on", "/traps/", "-q"], 0),
    (["-s", "stage1", "--", "--site-pages", "6", "--fail-on", "/p/3"], 0),
    (["-s", "stage2", "--", "--site-pages", "6", "--fail-on", "/p/3"], 0),
    (["-s", "trace", "--", "stage1"], 0),
    (["-s", "trace", "--", "stage2"], 0),
    (["-s", "trace", "--", "stage3"], 0),
    (["-s", "show", "--", "stage2"], 0),
    (["-s", "show", "--", "all"], 0),
    (["-s", "diff", "--", "stage1", "stage2"], 0),
    (["-s", "diff", "--", "stage2", "stage3", "--html"], 0),
    (["-s", "compare"], 0),
    (["-s", "exercise", "--", "list"], 0),
    (["-s", "exercise", "--", "start", "s2-step"], 0),
    (["-s", "exercise", "--", "check", "s2-step"], 1),
    (["-s", "exercise", "--", "hint", "s2-step"], 0),
    (["-s", "exercise", "--", "solve", "s2-step"], 0),
    (["-s", "exercise", "--", "check", "s2-step"], 0),
    (["-s", "exercise", "--", "lab", "apply", "01"], 0),
    (["-s", "exercise", "--", "lab", "undo", "01"], 0),
]


def offline_environment() -> dict[str, str]:
    """This environment with pip's index switched off, and nowhere else to look."""
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_INDEX_URL")}
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, PIP_EXTRA_INDEX_URL="")
    return env


def fresh_copy(dest: Path) -> Path:
    """The repository's tracked files, copied to dest: what a fresh clone holds."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def fingerprint(folder: Path, names: Sequence[str]) -> dict[str, str]:
    """A hash of each of these files: equal fingerprints, unchanged files."""
    return {name: sha256((folder / name).read_bytes()).hexdigest() for name in names}


def run(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run a command; return its exit status and its output, stdout and stderr together."""
    done = subprocess.run(
        list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return done.returncode, done.stdout


def check(ok: bool, what: str, output: str = "") -> None:
    """Say what passed, or stop with what failed and the output that shows why."""
    if not ok:
        print(f"FAILED: {what}\n{output[-3000:]}")
        raise SystemExit(1)
    print(f"ok: {what}")


def old_python(work: Path) -> None:
    """nox on 3.10: a sentence within 5 s without a 3.11+, else the newest 3.11+ it finds."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    old = sorted(root.glob("versions/3.10.*/bin/python3.10"))
    newer = sorted(root.glob("versions/3.12.*/bin/python3.12"))
    check(bool(old and newer), f"pyenv has Python 3.10 and 3.12 ({root})")
    venv = work / "nox310"
    run([str(old[-1]), "-m", "venv", str(venv)], work)
    status, output = run([str(venv / "bin" / "python"), "-m", "pip", "install", "nox"], work)
    check(status == 0, "nox installed on Python 3.10", output)
    copy = fresh_copy(work / "repo310")
    env = {k: v for k, v in os.environ.items() if k != "PYENV_ROOT"}
    started = time.monotonic()
    env["PATH"] = str(venv / "bin")  # no other Python at all
    status, output = run([str(venv / "bin" / "nox"), "-s", "setup"], copy, env)
    took = time.monotonic() - started
    said = "nox runs on Python 3.10" in output and "python3.12 -m nox -s setup" in output
    check(status != 0 and took < 5 and said, f"no 3.11+: stops in {took:.1f} s, saying", output)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(newer[-1].parent)])
    status, output = run([str(venv / "bin" / "nox"), "-s", "setup"], copy, env)
    check(status == 0 and "run on Python 3.12" in output, "3.12 found and used", output)
    made = (copy / ".nox" / "class" / "pyvenv.cfg").read_text()
    check("version = 3.12" in made or "version_info = 3.12" in made, "the class env is 3.12", made)
    command = [str(venv / "bin" / "nox"), "-s", "stage1", "--", "--site-pages", "6", "-q"]
    status, output = run(command, copy, env)
    check(status == 0 and "Finished 7 urls" in output, "a crawl on it", output)


def offline(work: Path) -> None:
    """Setup once with the network, then every class command without it."""
    copy = fresh_copy(work / "repo")
    tracked = [str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()]
    before = fingerprint(copy, tracked)
    status, output = run([*NOX, "-s", "setup"], copy)
    check(status == 0 and "ready for class" in output, "nox -s setup", output)
    print(next(line for line in output.splitlines() if line.startswith("ready for class")))
    for argv, expected in OFFLINE_COMMANDS:
        status, output = run([*NOX, *argv], copy, offline_environment())
        check(status == expected, f"offline: nox {' '.join(argv)} exits {expected}", output)
    check(fingerprint(copy, tracked) == before, "the copy's files are as they were")


def wheelhouse(work: Path) -> None:
    """The wheelhouse for every system and Python; this one installs from it, no index."""
    folder = work / "wheels"
    # Made in the copy the offline part set up, whose class environment it runs on: not
    # a third one built with the network (alone, this part makes the copy first).
    source = work / "repo"
    if not source.is_dir():
        fresh_copy(source)
    status, output = run([*NOX, "-s", "wheelhouse", "--", str(folder)], source)
    check(status == 0, "nox -s wheelhouse", output)
    print((folder / "wheels.txt").read_text().splitlines()[0])
    copy = fresh_copy(work / "repo-wheels")
    venv = work / "nox-from-wheels"
    run([sys.executable, "-m", "venv", str(venv)], work)
    python = str(venv / "bin" / "python")
    install = [python, "-m", "pip", "install", "--no-index", "--find-links", str(folder), "nox"]
    status, output = run(install, work, offline_environment())
    check(status == 0, "nox installed from the wheelhouse, no index", output)
    setup = [python, "-m", "nox", "-s", "setup", "--", "--wheels", str(folder)]
    status, output = run(setup, copy, offline_environment())
    check(status == 0 and "ready for class" in output, "setup from the wheelhouse", output)
    crawl = [python, "-m", "nox", "-s", "stage3", "--", "--site-pages", "6", "-q"]
    status, output = run(crawl, copy, offline_environment())
    check(status == 0 and "Finished 7 urls" in output, "a crawl after it", output)
    handout_offline(work, folder, [python, "-m", "nox"], copy)


def handout_offline(work: Path, wheels: Path, nox: Sequence[str], repo: Path) -> None:
    """A handout set up by its README's own commands, offline from ``wheels``, then checked."""
    made = work / "handout-s2-future"
    status, output = run([*nox, "-s", "exercise", "--", "handout", "s2-future", str(made)], repo)
    check(status == 0, "a handout of s2-future", output)
    readme = (made / "README.md").read_text(encoding="utf-8")
    blocks = [block.splitlines() for block in readme.split("```sh\n")[1:]]
    commands = [line.split("  #")[0].strip() for block in blocks for line in block]
    linux = commands[: commands.index("```")]  # the first block: Linux and macOS
    offline = next(c for c in commands if "--no-index --find-links DIR" in c)
    first_check = next(c for c in commands if c.startswith("python -m shared.tools.exercises"))
    steps = [c for c in linux if "pip install" not in c]
    steps += [offline.replace("DIR", str(wheels)), first_check]
    status, output = run(["sh", "-c", " && ".join(steps)], made, offline_environment())
    said = "0 of 3 tasks passed" in output
    check(status == 1 and said, f"the handout's README, offline: {' && '.join(steps)}", output)
    # Made on this Python, checked on another: the manifest's outlines read the same on
    # every version, so an untouched handout is unsolved there, not tampered.
    mine = f"python3.{sys.version_info.minor}"
    other = next(
        (
            f"python3.{m}"
            for m in (13, 12, 14, 11)
            if shutil.which(f"python3.{m}")
            and f"python3.{m}" != mine
            and run([f"python3.{m}", "-V"], work)[0] == 0
        ),
        None,
    )
    if other is None:
        print(f"(no Python but {mine} here: the handout is not checked on another)")
        return
    venv = work / f"venv-{other}"
    steps = [f"{other} -m venv {venv}", offline.replace("DIR", str(wheels)), first_check]
    steps = [step.replace("python -m", f"{venv}/bin/python -m", 1) for step in steps]
    status, output = run(["sh", "-c", " && ".join(steps)], made, offline_environment())
    said = "0 of 3 tasks passed" in output and "tampered" not in output
    check(status == 1 and said, f"a handout made on {mine}, checked on {other}", output)


def pip_route(readme: str) -> list[str]:
    """The README's commands without pipx, for Linux and macOS: its sh block that makes a .venv."""
    blocks = [block for block in readme.split("```sh\n")[1:] if "-m venv .venv" in block]
    lines = (line.split("#")[0].strip() for line in blocks[0].split("```")[0].splitlines())
    return [line for line in lines if line]


def pip_only(work: Path) -> None:
    """The README's pip-only route, in a fresh copy, with the machine's python3."""
    copy = fresh_copy(work / "repo-pip")
    steps = pip_route((copy / "README.md").read_text(encoding="utf-8"))
    said = [step.split("#")[0] for step in steps]
    ok = said[0].startswith("python3 -m venv .venv") and "pip install nox" in said[1]
    check(ok and "-m nox -s " in said[-1], f"the README's route: {' && '.join(steps)}")
    env: dict[str, str] | None = None
    wheels = work / "wheels"
    if (wheels / "wheels.txt").is_file():  # offline, as the wheelhouse part installs
        env = offline_environment()
        steps[1] = steps[1].replace("pip install", f"pip install --no-index --find-links {wheels}")
        python = steps[1].split(" -m pip")[0]
        steps.insert(2, f"{python} -m nox -s setup -- --wheels {wheels}")
    status, output = run(["sh", "-c", " && ".join(steps)], copy, env)
    check(status == 0 and "Finished" in output, f"pip only: {' && '.join(steps)}", output)


def main(argv: Sequence[str]) -> int:
    """Run the parts named (old-python, offline, wheelhouse, pip-only), or all four."""
    parts = {
        "old-python": old_python,
        "offline": offline,
        "wheelhouse": wheelhouse,
        "pip-only": pip_only,
    }
    with tempfile.TemporaryDirectory(prefix="class-") as tmp:
        for name in argv or list(parts):
            print(f"--- {name}")
            parts[name](Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
