"""Where is every task waiting: the task tree on SIGUSR1, and at Ctrl-C with -v.

The crawl hangs on purpose: its server accepts the connection, reads the request and
never answers, and --timeout is far away.  The tree must say why: robots.txt's task
waits to read, the worker that started it waits for it, the other worker waits on the
queue.  Python 3.14 would print stage 3's tree with asyncio's own format_call_graph; on
older Pythons (this machine's) the same shape comes from shared/tasktree.py, tested here.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared import STAGES
from shared.tasktree import Node, render

ROOT = Path(__file__).resolve().parent.parent
BOUND_S = 30  # far above any wait here: only a hang ever reaches it
HEADER = "--- tasks ---"
FRAME = re.compile(
    r"^ *\|   File '(?P<file>.+)', line (?P<line>\d+), in (?:async|generator) (?P<fn>\S+)\(\)$"
)
TASK_STAGES = [STAGES["stage2"], STAGES["stage3"]]


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A loopback server that takes connections and never says a word."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(BOUND_S)
        yield server


@contextlib.contextmanager
def hanging_crawl(
    package: str, server: socket.socket, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A crawl of the silent server, started and stuck: its request read, never answered."""
    port = server.getsockname()[1]
    errors = tmp_path / "stderr"
    argv = [sys.executable, "-m", package, f"http://127.0.0.1:{port}/", "-v"]
    argv += ["--max-tasks", "2", "--timeout", "600"]
    with errors.open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    try:
        conn, _ = server.accept()  # robots.txt's fetch has connected
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(4096)
            time.sleep(0.3)  # the task is back at the loop, waiting to read the answer
            yield proc, errors
    finally:
        proc.kill()
        proc.wait()


def tree_printed(errors: Path, count: int) -> str:
    """Wait until standard error holds ``count`` task trees; return the last one."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        text = errors.read_text(encoding="utf-8", errors="replace")
        if text.count(HEADER) >= count:
            tree = text.split(HEADER)[count]
            return "\n".join(line for line in tree.splitlines() if line[:1] in ("*", "+", "|", " "))
        time.sleep(0.05)
    raise AssertionError(f"no task tree after {BOUND_S} s:\n{errors.read_text()}")


def blocks(tree: str) -> dict[str, str]:
    """The tree's top-level blocks, by task name."""
    found = {}
    for block in re.split(r"^(?=\* Task\(name=)", tree, flags=re.MULTILINE):
        if match := re.match(r"\* Task\(name='([^']+)', id=0x[0-9a-f]+\)\n", block):
            found[match[1]] = block
    return found


def check_tree(tree: str, package: str) -> None:
    """The tree says why the crawl hangs, each frame at a line where a coroutine pauses."""
    tasks = blocks(tree)
    assert {"robots.txt", "worker-0", "worker-1"} <= tasks.keys(), tree
    robots = tasks["robots.txt"]
    stack, _, waiters = robots.partition("+ Awaited by:\n")
    assert stack.splitlines()[1] == "+ Call stack:"
    functions = [m["fn"] for line in stack.splitlines() if (m := FRAME.match(line))]
    assert functions[-2:] == ["Crawler.request", "Crawler.fetch"], robots  # innermost first
    # robots.txt is awaited by the worker whose page needs it, paused in robots().
    assert waiters.startswith("   * Task(name='worker-0'"), robots
    assert "      + Call stack:\n" in waiters and "in async Crawler.robots()" in waiters.replace(
        "generator", "async"
    )
    idle = tasks["worker-1"]
    assert "Crawler.work()" in idle and "get()" in idle  # the other worker: on the queue
    crawler = ROOT / package / "crawler.py"
    source = crawler.read_text(encoding="utf-8").splitlines()
    for line in tree.splitlines():
        if (frame := FRAME.match(line)) and Path(frame["file"]) == crawler:
            paused_at = source[int(frame["line"]) - 1]
            assert "yield from" in paused_at or "await" in paused_at or "async " in paused_at, line


@pytest.mark.parametrize("package", TASK_STAGES)
@pytest.mark.parametrize(
    ("press", "presses", "status"),
    [(signal.SIGUSR1, 2, None), (signal.SIGINT, 1, 130)],
    ids=["sigusr1", "ctrl-c-with-v"],
)
def test_a_signal_prints_where_every_task_waits(
    package: str,
    press: signal.Signals,
    presses: int,
    status: int | None,
    silent_server: socket.socket,
    tmp_path: Path,
) -> None:
    """Mid-crawl, kill -USR1 prints the tree, and the crawl goes on (still hanging), to
    print it again; with -v, the first Ctrl-C prints the tree as the press found it, then
    the crawl ends with 130."""
    with hanging_crawl(package, silent_server, tmp_path) as (proc, errors):
        for count in range(1, presses + 1):
            proc.send_signal(press)
            check_tree(tree_printed(errors, count), package)
        if status is None:
            assert proc.poll() is None  # the crawl is still there, still stuck
        else:
            assert proc.wait(timeout=BOUND_S) == status
    text = errors.read_text(encoding="utf-8")
    assert text.count(HEADER) == presses


def test_without_v_ctrl_c_prints_no_tree(silent_server: socket.socket, tmp_path: Path) -> None:
    """The tree at Ctrl-C is for -v: a plain Ctrl-C stays as quiet as before."""
    port = silent_server.getsockname()[1]
    argv = [sys.executable, "-m", STAGES["stage2"], f"http://127.0.0.1:{port}/"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        conn, _ = silent_server.accept()
        with conn:
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            _, errors = proc.communicate(timeout=BOUND_S)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and HEADER.encode() not in errors


def test_the_shape_is_format_call_graphs() -> None:
    """A waiter nests three columns in, its own lines six: as asyncio's documentation shows."""
    inner = Node("Task(name='b', id=0x2)", [("m.py", 7, "async main")])
    outer = Node("Task(name='a', id=0x1)", [("t.py", 4, "async test")], [inner])
    assert render(outer) == [
        "* Task(name='a', id=0x1)",
        "+ Call stack:",
        "|   File 't.py', line 4, in async test()",
        "+ Awaited by:",
        "   * Task(name='b', id=0x2)",
        "      + Call stack:",
        "      |   File 'm.py', line 7, in async main()",
    ]


def test_on_python_314_stage3s_tree_is_asyncios_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where asyncio has format_call_graph (3.14), each task's block is asyncio's words."""
    import asyncio

    from shared import tasktree

    asked: list[str] = []

    def format_call_graph(task: asyncio.Task[None]) -> str:
        asked.append(task.get_name())
        return f"* Task(name={task.get_name()!r}) in asyncio's words"

    monkeypatch.setattr(asyncio, "format_call_graph", format_call_graph, raising=False)

    async def main() -> str:
        waiter = asyncio.create_task(asyncio.sleep(10), name="sleeper")
        await asyncio.sleep(0)
        try:
            return tasktree.task_tree()
        finally:
            waiter.cancel()

    tree = asyncio.run(main())
    assert len(asked) == 2 and "sleeper" in asked  # every task, the main one too
    assert "* Task(name='sleeper') in asyncio's words\n" in tree
