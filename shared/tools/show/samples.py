"""The tracebacks the show page samples, written by the command that prints them.

``python -m shared.tools.show.samples`` runs the stack-ripping demo the page gives
(``--fail-on /p/3``) with stage 1 and stage 2, and writes each traceback into the page's
block for that stage, in README.md and in README.zh-CN.md, which keeps the same blocks.
A traceback names the line of each frame (``File "...", line 59, in work``): when the code
above a frame grows, this command, not a hand, puts the new numbers in; a test
(tests/test_readme.py) runs the same and fails while a page is behind.  A page that is up
to date is left as it is: its port too, which changes from run to run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: The show pages, each with a traceback block per stage, from the repository's root.
PAGES = ("shared/tools/show/README.md", "shared/tools/show/README.zh-CN.md")
#: The demo's options, as the page gives them after ``nox -s stage1 --``.
DEMO = "--site-pages 6 --fail-on /p/3 --ignore-robots -q"
STAGES = ("stage1_callbacks", "stage2_generators")
PORT = re.compile(r"127\.0\.0\.1:\d+")
BOUND_S = 60  # far above any run: only a hang ever reaches it


def traceback_lines(text: str, root: Path = ROOT) -> list[str]:
    """The first traceback in a text, as the page shows it: paths from the repository's
    root, the ``^^^`` marks under a call (Python 3.11+) left out."""
    lines = text[text.index("Traceback (most recent call last):") :].splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        if re.fullmatch(r"\s*[\^~]+\s*", line):
            continue
        out.append(line.replace(f'"{root}{os.sep}', '"'))
        if not line.startswith(" "):  # the exception's own line ends the traceback
            break
    return out


def printed(package: str, root: Path = ROOT) -> list[str]:
    """The traceback a stage prints for the demo today, run from ``root``."""
    done = subprocess.run(
        [sys.executable, "-m", package, *DEMO.split()],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m {package} {DEMO} failed:\n{done.stderr}")
    return traceback_lines(done.stderr, root)


def same(one: list[str], other: list[str]) -> bool:
    """Whether two tracebacks are the same, the port aside."""
    return [PORT.sub("PORT", line) for line in one] == [PORT.sub("PORT", line) for line in other]


def block_of(text: str, package: str) -> re.Match[str]:
    """The page's one fenced traceback block for a stage."""
    found = [
        match
        for match in re.finditer(
            r"^```\n(Traceback \(most recent call last\):\n.*?)^```", text, re.S | re.M
        )
        if f'"{package}/' in match[1]
    ]
    if len(found) != 1:
        raise ValueError(f"{len(found)} traceback blocks for {package}, not one")
    return found[0]


def behind(root: Path = ROOT) -> dict[str, list[str]]:
    """The pages whose traceback blocks are not what the stages print today, and, for
    each, the stages behind."""
    today = {package: printed(package, root) for package in STAGES}
    stale: dict[str, list[str]] = {}
    for page in PAGES:
        text = (root / page).read_text(encoding="utf-8")
        for package, lines in today.items():
            if not same(block_of(text, package)[1].splitlines(), lines):
                stale.setdefault(page, []).append(package)
    return stale


def write(root: Path = ROOT) -> list[str]:
    """Write today's tracebacks into every page that is behind; return the pages written."""
    today = {package: printed(package, root) for package in STAGES}
    written = []
    for page in PAGES:
        path = root / page
        text = path.read_text(encoding="utf-8")
        new = text
        for package, lines in today.items():
            block = block_of(new, package)
            if same(block[1].splitlines(), lines):
                continue
            port = PORT.search(block[1])  # keep the page's port: no change from run to run
            body = "\n".join(PORT.sub(port[0], line) if port else line for line in lines)
            new = new[: block.start(1)] + body + "\n" + new[block.end(1) :]
        if new != text:
            path.write_text(new, encoding="utf-8")
            written.append(page)
    return written


def main() -> int:
    """Write the tracebacks into the pages that are behind, and say which."""
    written = write()
    for page in written:
        print(f"wrote the tracebacks of {page}")
    if not written:
        print("the show pages' tracebacks are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
