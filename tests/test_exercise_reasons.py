"""`check` prints each reason whole: never cut, an object's repr said by its name, wrapped.

In-process, through the same functions a check goes through: the exercises' plugin turns
what a test raised into a reason (tests/exercises/conftest.py, `short_reason`), the task's
line says it in the reader's language (checking.TaskResult.line) and `check` wraps the
line to the screen (reports.wrapped).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import stage2_loop
import test_s2_crawl
from stage2_loop import loop_fixture  # noqa: F401 (the fixture `loop`)

from shared.tools.exercises import answers, catalog
from shared.tools.exercises.checking import TaskResult, shorter_reprs
from shared.tools.exercises.messages import again
from shared.tools.exercises.reports import wrapped
from shared.tools.language import display_width
from stage2_generators.futures import Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.tasks import Task

PLUGIN = Path(__file__).resolve().parent / "exercises" / "conftest.py"
COLUMNS = 60  # narrower than any screen: every one of these reasons has to wrap

# The longest reasons `check` gave the catalogue's wrong answers, as the tests raised them
# (teachers/exercises/NAME.toml; each is checked to still hold the words its entry names).
LONGEST = {
    "delay/stage2-sleep-without-yield-from": (
        "AssertionError: polite(url) gave NoneType, not a coroutine: it must be one that the "
        "worker's fetch waits on, pausing with yield from sleep(...) (stage 2) or await "
        "asyncio.sleep(...) (stage 3); sleep(delay) called alone only makes a coroutine that "
        "nobody runs"
    ),
    "s2-crawl/task-done-only-on-success": (
        "the queue's work never ended: a worker takes URL after URL, and each q.get() needs "
        "its q.task_done(), even when the fetch raises; nothing is left that could finish it "
        "(deadlock: no callback, timer or socket can ever wake the loop)"
    ),
    "s2-crawl/workers-never-cancelled": (
        "crawl() never returned: it joins the queue, then cancels each worker and waits for "
        "it; nothing is left that could finish it (deadlock: no callback, timer or socket can "
        "ever wake the loop)"
    ),
    "s1-read/one-chunk-is-the-response": (
        "AssertionError: the crawl recorded ['/'], not / and /next: / failed with "
        "RuntimeError: the response is not complete yet; read until recv() would block, "
        "feeding the parser every chunk"
    ),
    "redirects/no-coalescing": (
        "AssertionError: the second redirect to /joined queued "
        "[('http://127.0.0.1:8080/joined', 9)]: a target seen before is not queued again "
        "(coalesce), so add each target to self.seen_urls"
    ),
    "s2-queue/forgets-to-wake-the-joiners": (
        "join() was never woken: the last task_done() must wake the joiners; nothing is left "
        "that could finish it (deadlock: no callback, timer or socket can ever wake the loop)"
    ),
    "s1-connect/blocking-io-error-is-a-failure": (
        "AssertionError: start() kept no socket in self.sock: did connect() raise "
        "BlockingIOError, and was that taken for a failure? On a non-blocking socket it "
        "means 'begun'."
    ),
}


def plugin() -> ModuleType:
    """The exercises' plugin, loaded from its file (tests/conftest.py has the same name)."""
    spec = importlib.util.spec_from_file_location("exercises_plugin", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reason_of(test: Callable[[], object]) -> str:
    """The reason the plugin records for a test phase that ran ``test``."""
    call = pytest.CallInfo.from_call(test, "call")
    assert call.excinfo is not None, "the test did not fail"
    reason = plugin().short_reason(call)
    assert isinstance(reason, str)
    return reason


def raising(reason: str) -> Callable[[], object]:
    """A test that fails with ``reason``: an assert's, or pytest.fail's (no type before it)."""
    kind, colon, words = reason.partition("AssertionError: ")

    def test() -> object:
        if colon and not kind:
            raise AssertionError(words)
        pytest.fail(reason, pytrace=False)

    return test


def squeezed(text: str) -> str:
    """``text`` without its whitespace: what wrapping may change, and nothing else."""
    return "".join(text.split())


def printed(reason: str, lang: str) -> list[str]:
    """The lines `check` prints for a task that failed with ``reason``, COLUMNS wide."""
    return wrapped(TaskResult(2, False, [reason], tests=3).line(lang), COLUMNS)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("key", sorted(LONGEST))
def test_the_longest_reasons_of_the_catalogue_are_printed_whole(key: str, lang: str) -> None:
    name, _, wrong = key.partition("/")
    mistake = next(m for m in answers.load(catalog.named(name)).mistakes if m.name == wrong)
    assert mistake.says in LONGEST[key], f"{key}: the catalogue now expects {mistake.says!r}"
    reason = reason_of(raising(LONGEST[key]))
    assert reason == LONGEST[key], "the plugin did not record the reason whole"
    lines = printed(reason, lang)
    assert len(lines) > 1, "a reason this long stays on one line"
    too_wide = [line for line in lines if display_width(line) > COLUMNS]
    assert not too_wide, f"lines wider than {COLUMNS} columns: {too_wide}"
    cut = "the reason was cut:\n" + "\n".join(lines)
    assert squeezed(again(reason, lang)) in squeezed("".join(lines)), cut


def waits(future: Future[None]) -> Iterator[Future[None]]:
    """A coroutine that waits for ``future``."""
    return (yield from future)


def test_a_reason_names_a_task_by_its_class_not_its_address(loop: EventLoop) -> None:
    """The harness's deadlock, after a callback raised an error that shows a Task."""
    task = Task(waits(Future()), name="worker-0")

    def woken_twice() -> None:
        raise RuntimeError(f"{task!r} was woken twice")

    loop.call_soon(woken_twice)
    reason = reason_of(lambda: stage2_loop.run(loop, task))
    assert " object at 0x" in reason, f"the error no longer shows a repr: {reason}"
    lines = printed(reason, "en")
    said = " ".join(line.strip() for line in lines)
    assert " object at " not in said and "0x" not in said, said
    assert "RuntimeError: Task was woken twice" in said, said
    assert squeezed(shorter_reprs(reason)) in squeezed(said), f"the reason was cut: {said}"


def test_a_crawl_cancelled_from_within_is_said_in_words_in_every_task(loop: EventLoop) -> None:
    """CancelledError is no Exception: s2-crawl's task-2 tests, which run the student's
    crawl(), say what it means (as s3-workers' do), not the bare name of its type."""

    class LetsItOut(test_s2_crawl.Watched):
        def crawl(self) -> Coroutine[None]:
            worker = Task(waits(Future()))
            worker.cancel()
            yield from worker  # no suppress: the worker's CancelledError leaves crawl()

    reason = reason_of(lambda: test_s2_crawl.crawl(loop, LetsItOut(["http://one.invalid/"])))
    assert "crawl() ended cancelled, though nobody cancelled it" in reason, reason
