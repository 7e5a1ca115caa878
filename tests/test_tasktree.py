"""Where is every task waiting: the task tree on SIGUSR1, and at Ctrl-C with -v.

The crawl hangs on purpose: its server accepts the connection, reads the request and
never answers, and --timeout is far away.  The tree must say why: robots.txt's task
waits to read, the worker that started it waits for it, the other worker waits on the
queue, and the main task, named crawl in stages 2 and 3 alike, waits for the queue to
empty.  One tree from the main task down, each task once, as `python -m asyncio pstree`
prints asyncio's on Python 3.14 (shared/tools/instruments/tasktree.py).
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
from typing import Any

import pytest

from shared import STAGES
from shared.tools.instruments import tasktree

ROOT = Path(__file__).resolve().parent.parent
BOUND_S = 30  # far above any wait here: only a hang ever reaches it
HEADER = "--- tasks ---"
# A task's line and a frame's, in the tree: "│   └── (T) robots.txt  id=0x7f..." and
# "│       ├──  Crawler.fetch()  stage2_generators/crawler.py:96".
TASK = re.compile(
    r"^(?P<indent>(?:[│ ]   )*)[├└]── \(T\) (?P<name>\S+)  id=0x[0-9a-f]+(?P<rest>.*)$"
)
FRAME = re.compile(
    r"^(?P<indent>(?:[│ ]   )*)[├└]──  (?P<fn>\S+)\(\)  (?P<file>\S+):(?P<line>\d+)$"
)
# A run of a library's frames, folded as pstree folds identical threads: one line, a count.
FOLDED = re.compile(r"^(?P<indent>(?:[│ ]   )*)[├└]──  \[(?P<count>\d+) frames of (?P<libs>.+)\]$")
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
            return "\n".join(line for line in tree.splitlines() if line[:1] in ("└", "├", "│", " "))
        time.sleep(0.05)
    raise AssertionError(f"no task tree after {BOUND_S} s:\n{errors.read_text()}")


def parse(tree: str) -> dict[str, tuple[str | None, list[tuple[str, str, int]]]]:
    """Each task of a tree: the task it hangs from (None at the root) and its frames,
    outermost first.  Every line is a task's or a frame's, each task appears once, and
    each line is indented one step below the task it belongs to."""
    tasks: dict[str, tuple[str | None, list[tuple[str, str, int]]]] = {}
    above: list[str] = []  # the task at each depth on the way to this line
    for line in tree.splitlines():
        task, frame = TASK.match(line), FRAME.match(line) or FOLDED.match(line)
        assert task or frame, f"neither a task nor a frame: {line!r}\n{tree}"
        depth = len((task or frame)["indent"]) // 4  # type: ignore[index]
        if task:
            assert task["name"] not in tasks and not task["rest"], f"twice: {line!r}\n{tree}"
            del above[depth:]
            tasks[task["name"]] = (above[-1] if above else None, [])
            above.append(task["name"])
        else:
            assert frame is not None and depth == len(above), f"misplaced: {line!r}\n{tree}"
            if "count" in frame.groupdict():  # folded: its libraries in the file's place
                tasks[above[-1]][1].append(("[folded]", frame["libs"], int(frame["count"])))
            else:
                tasks[above[-1]][1].append((frame["fn"], frame["file"], int(frame["line"])))
    return tasks


def check_tree(tree: str, package: str) -> None:
    """The tree says why the crawl hangs, each frame at a line where a coroutine pauses."""
    tasks = parse(tree)
    assert tasks["crawl"][0] is None, tree  # the main task, at the root
    # The workers, awaited by no task, hang from the main task, in the order of their names;
    # robots.txt from the worker whose page needs it, paused in robots().
    assert list(tasks) == ["crawl", "worker-0", "robots.txt", "worker-1"], tree
    assert tasks["worker-0"][0] == tasks["worker-1"][0] == "crawl", tree
    assert tasks["robots.txt"][0] == "worker-0", tree
    assert [fn for fn, _, _ in tasks["crawl"][1]][:2] == ["Crawler.crawl", "Queue.join"], tree
    assert [fn for fn, _, _ in tasks["worker-0"][1]][:2] == ["Crawler.work", "Crawler.robots"]
    assert [fn for fn, _, _ in tasks["robots.txt"][1]][:2] == ["Crawler.fetch", "Crawler.request"]
    assert [fn for fn, _, _ in tasks["worker-1"][1]][:2] == ["Crawler.work", "Queue.get"]
    if package == STAGES["stage2"]:  # our own Future: its frame is where the task waits
        assert all(t[1][-1][0] == "Future.__iter__" for t in tasks.values()), tree
    crawler = f"{package}/crawler.py"
    source = (ROOT / crawler).read_text(encoding="utf-8").splitlines()
    for _, frames in tasks.values():
        for _, file, line in frames:
            if file == crawler:
                paused_at = source[line - 1]
                pauses = ("yield from", "await", "async with", "async for")
                assert any(word in paused_at for word in pauses), (file, line, paused_at)


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


def test_library_frames_fold_into_one_line_saying_how_many(
    silent_server: socket.socket, tmp_path: Path
) -> None:
    """Stage 3's robots.txt waits to read deep inside aiohttp: below each call
    the crawl made (its first library frame, kept), the rest fold into one line that counts
    them; the crawl's own frames stay one a line."""
    with hanging_crawl(STAGES["stage3"], silent_server, tmp_path) as (proc, errors):
        proc.send_signal(signal.SIGUSR1)
        tasks = parse(tree_printed(errors, 1))
    for name, (_, frames) in tasks.items():
        library = [not file.startswith(("stage", "shared/")) for _, file, _ in frames]
        assert not any(all(library[i : i + 3]) for i in range(len(library) - 2)), (name, frames)
    *_, called, folded = tasks["robots.txt"][1]
    assert called[1].startswith("aiohttp/") and folded[0] == "[folded]", tasks["robots.txt"]
    assert folded[2] >= 2 and "aiohttp" in folded[1], folded


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


def test_the_shape_is_pstrees_one_tree_each_task_once() -> None:
    """Frames under their task, then the tasks it awaits; a task awaited twice is shown
    once, the second time named only; workers no task awaits hang from the main task."""

    class Task:  # stage 2's, as far as the tree looks: a name, a coroutine, a future
        def __init__(self, name: str, coro: Any) -> None:
            self.name, self._coro, self._fut_waiter = name, coro, None

    def paused(function: Any) -> Any:
        coro = function()
        next(coro)
        return coro

    def crawl() -> Iterator[None]:
        yield

    def work() -> Iterator[None]:
        yield

    main, fetch = Task("crawl", paused(crawl)), Task("robots.txt", paused(work))
    workers = [Task(f"worker-{n}", paused(work)) for n in (10, 2)]
    for worker in workers:
        worker._fut_waiter = fetch
    lines = tasktree.lines([fetch, *workers, main], tasktree.generator_waits_for)
    here, line = "tests/test_tasktree.py", crawl.__code__.co_firstlineno + 1
    ids = {task.name: f"{id(task):#x}" for task in (main, fetch, *workers)}
    local = "test_the_shape_is_pstrees_one_tree_each_task_once.<locals>"
    work_at = f"{local}.work()  {here}:{line + 3}"
    assert lines == [
        f"└── (T) crawl  id={ids['crawl']}",
        f"    ├──  {local}.crawl()  {here}:{line}",
        f"    ├── (T) worker-2  id={ids['worker-2']}",
        f"    │   ├──  {work_at}",
        f"    │   └── (T) robots.txt  id={ids['robots.txt']}",
        f"    │       └──  {work_at}",
        f"    └── (T) worker-10  id={ids['worker-10']}",
        f"        ├──  {work_at}",
        f"        └── (T) robots.txt  id={ids['robots.txt']}  (shown above, under the task"
        " that awaits it first)",
    ]
    assert parse("\n".join(lines[:6]))["robots.txt"][0] == "worker-2"


def test_stage3s_main_task_is_named_crawl_as_stage2s() -> None:
    """asyncio names the task of asyncio.run "Task-N"; the tree names it by its coroutine."""
    import asyncio

    class Crawler:
        async def crawl(self) -> str:
            worker = asyncio.create_task(asyncio.sleep(10), name="worker-0")
            await asyncio.sleep(0)
            try:
                return tasktree.task_tree()
            finally:
                worker.cancel()

    tree = asyncio.run(Crawler().crawl())
    assert re.match(r"└── \(T\) crawl  id=0x", tree), tree
    assert list(parse(tree)) == ["crawl", "worker-0"], tree
