"""Exercise delay: --delay S between the starts of two requests to one host, three styles.

Task N is stage N's `Crawler.polite`: a timer in stage 1, `yield from sleep(...)` in
stage 2, `await asyncio.sleep(...)` in stage 3 (see shared/tools/exercises/delay/README.md).
How long to wait is BaseCrawler.delay_before's answer, the same in every stage; each
test asks the server when the requests came, or times a crawl whose every try fails.

The contract (the README's "What your code must do"), a test for each promise:
- requests to one host start at least --delay apart, tries again included (the server's
  clock: test_the_server_sees_the_requests_start_delay_apart, test_a_try_again_...);
- each request books one turn: delay_before is called once per request (same test);
- a try waits what delay_before answered, no longer (counted: the timer's delay, the sleep's);
- without --delay nothing waits: stage 1's start is the loop's next step, and polite ends
  at its first step in stages 2 and 3;
- a start not yet due is the fetcher's timer: Ctrl-C (close()) cancels it (stage 1);
  a cancel that lands on the wait comes out of polite (stages 2 and 3).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import itertools
import socket
import statistics
from typing import Any

import pytest
from reasons import reason
from stage1_harness import Harness

from shared.crawling import BaseCrawler, Options
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle

# Each stage is a task of its own: task 1 is stage 1, and so on.
STAGES = [
    pytest.param("stage1_callbacks", marks=pytest.mark.task(taskno=1), id="stage1"),
    pytest.param("stage2_generators", marks=pytest.mark.task(taskno=2), id="stage2"),
    pytest.param("stage3_asyncio", marks=pytest.mark.task(taskno=3), id="stage3"),
]
DELAY = 0.1
# A loaded machine may shift an arrival by a connect's worth of time, so a check asks for
# half the delay: starts that do not wait at all come a few milliseconds apart.
SLACK = DELAY / 2
# The whole span forgives one delay: a first request that starts late shortens it, since
# each start is booked DELAY after the one booked before it, not after the one that
# happened.  A crawl that waits once per worker, not per request, spans a quarter of it.
SPAN_SLACK = DELAY


def count_bookings(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every answer delay_before gives from now on: each call books a turn of its host."""
    booked: list[float] = []
    book = BaseCrawler.delay_before

    def counted(self: BaseCrawler, url: str) -> float:
        answer = book(self, url)
        booked.append(answer)
        return answer

    monkeypatch.setattr(BaseCrawler, "delay_before", counted)
    return booked


def refused_root() -> str:
    """The root URL of a port nothing listens on: every try is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/"


@pytest.mark.parametrize("package", STAGES)
def test_without_delay_polite_waits_for_nothing(package: str) -> None:
    """No --delay: stage 1's start is the loop's next step; stages 2 and 3 pause nowhere."""
    root = refused_root()
    if package == "stage1_callbacks":
        crawler = Harness(root, Options())
        crawler.fetch(root, 0)  # polite(fetcher): the start goes to the loop
        fetcher = crawler.fetchers[root]
        assert fetcher.tries == 0, reason("delay.started-in-polite")
        crawler.loop.run_once()  # the loop's next step runs it
        fetcher.close()
        crawler.loop.close()
        assert fetcher.tries == 1, reason("delay.start-not-next", tries=fetcher.tries)
        return
    crawler = importlib.import_module(f"{package}.crawler").Crawler([root], Options())
    coroutine: Any = crawler.polite(root)
    assert inspect.isgenerator(coroutine) or inspect.iscoroutine(coroutine), reason(
        "delay.polite-not-a-coroutine", got=type(coroutine).__name__
    )
    try:
        paused_at = coroutine.send(None)  # the first step: a pause hands something out
    except StopIteration:
        return  # ended at once: no turn of the loop spent
    except Exception as exc:  # stage 2's sleep needs a running loop: it was called
        pytest.fail(reason("delay.slept-without-delay", error=repr(exc)))
    finally:
        coroutine.close()
    pytest.fail(reason("delay.paused-without-delay", paused_at=repr(paused_at)))


@pytest.mark.task(taskno=1)
def test_stage1_ctrl_c_cancels_a_start_not_yet_due() -> None:
    """Until its try starts, a Fetcher's timer is its start: close() (Ctrl-C) cancels it."""
    root = refused_root()
    crawler = Harness(root, Options(delay=DELAY))
    crawler.delay_before(root)  # the host's turn is taken now: the next start is DELAY away
    crawler.fetch(root, 0)
    fetcher = crawler.fetchers[root]
    assert fetcher.tries == 0, reason("delay.started-in-polite")
    crawler.cancel()  # what Ctrl-C runs: every Fetcher in flight is closed
    later: list[bool] = []
    crawler.loop.call_later(2 * DELAY, later.append, True)
    # A try that starts after the crawl forgot its Fetcher fails somehow: what counts is
    # that it started.
    with contextlib.suppress(Exception):
        crawler.loop.run_until(lambda: bool(later))
    fetcher.close()
    crawler.loop.close()
    assert fetcher.tries == 0, reason("delay.started-after-ctrl-c", tries=fetcher.tries)


@pytest.mark.parametrize("package", STAGES)
def test_the_server_sees_the_requests_start_delay_apart(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--delay 0.1 with four fetches allowed at once: still one start per 0.1 s, one turn each."""
    crawl = importlib.import_module(package).crawl
    booked = count_bookings(monkeypatch)
    site = Site(pages=8, traps=False)
    with serve(site) as base_url:
        result = crawl([base_url], Options(max_tasks=4, delay=DELAY))
        assert_matches_oracle(result, site.expected(base_url))
    arrived = sorted(when for when, _, _ in site.arrivals)
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrived)]
    # The crawler spaces the starts; the server sees arrivals, which a busy machine can
    # shift by a connect's worth of time (one gap shrinks, the next grows).  So: the whole
    # span, and the typical gap, not the smallest one.
    span = arrived[-1] - arrived[0]
    assert span >= len(gaps) * DELAY - SPAN_SLACK, reason(
        "delay.too-fast", count=len(arrived), span=f"{span:.3f}", delay=DELAY
    )
    assert statistics.median(gaps) >= DELAY - SLACK, reason(
        "delay.the-requests-came-s-apart", value1=[round(g, 3) for g in gaps], value3=DELAY
    )
    # The cost: a turn booked and not used still holds the host back (every wait doubles).
    assert len(booked) == len(arrived), reason(
        "delay.turns-booked", booked=len(booked), requests=len(arrived)
    )


@pytest.mark.parametrize("package", STAGES)
def test_a_try_again_waits_its_turn_too(package: str) -> None:
    """Every try is a request: 3 tries of robots.txt, then 3 of the page, each 0.1 s apart."""
    crawl = importlib.import_module(package).crawl
    root = refused_root()
    result = crawl([root], Options(max_tries=3, delay=DELAY))
    tries = {stat.url: stat.tries for stat in result.fetches}
    assert tries == {root + "robots.txt": 3, root: 3}, reason(
        "delay.the-tries-were-not-3", tries=tries
    )
    assert result.elapsed_s >= 5 * DELAY - SLACK, reason(
        "delay.6-tries-in-s-every", value1=f"{result.elapsed_s:.3f}", value3=DELAY
    )


@pytest.mark.parametrize("package", STAGES)
def test_a_try_waits_what_delay_before_answered_and_no_longer(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted, not timed: the wait polite asks of its stage (stage 1: the start's timer;
    stages 2 and 3: the sleep) is the answer of delay_before, which is the whole wait."""
    root = refused_root()
    module = importlib.import_module(f"{package}.crawler")
    if package == "stage1_callbacks":
        crawler: Any = Harness(root, Options(delay=DELAY))
    else:
        crawler = module.Crawler([root], Options(delay=DELAY))
    crawler.delay_before(root)  # the host's turn is taken now: the next start is DELAY away
    answers = count_bookings(monkeypatch)
    waits: list[float] = []
    if package == "stage1_callbacks":
        call_later = crawler.loop.call_later

        def timer(delay: float, callback: Any, *args: Any) -> Any:
            waits.append(delay)
            return call_later(delay, callback, *args)

        monkeypatch.setattr(crawler.loop, "call_later", timer)
        crawler.fetch(root, 0)  # polite(fetcher): the start's timer
        crawler.fetchers[root].close()
        crawler.loop.close()
    else:

        def generator_sleep(delay: float) -> Any:
            waits.append(delay)
            yield from ()

        async def asyncio_sleep(delay: float, result: Any = None) -> Any:
            waits.append(delay)
            return result

        if package == "stage2_generators":
            monkeypatch.setattr(module, "sleep", generator_sleep)
        else:
            monkeypatch.setattr(module.asyncio, "sleep", asyncio_sleep)
        coroutine = crawler.polite(root)
        try:
            coroutine.send(None)  # the stand-in sleeps return at once: so does polite
        except StopIteration:
            pass
        finally:
            coroutine.close()
    asked = [round(wait, 3) for wait in waits]
    booked = [round(answer, 3) for answer in answers]
    assert asked == booked, reason("delay.waited-more-than-its-turn", waits=asked, answers=booked)


@pytest.mark.parametrize("package", STAGES[1:])
def test_a_cancel_that_lands_on_the_wait_ends_polite(package: str) -> None:
    """Ctrl-C, or the fetch's time running out, cancels the worker while it waits its
    turn: the CancelledError comes out of polite, and no request follows it."""
    root = refused_root()
    module = importlib.import_module(f"{package}.crawler")
    crawler = module.Crawler([root], Options(delay=10))
    crawler.delay_before(root)  # the host's turn is taken: the next start is 10 s away
    if package == "stage2_generators":
        from stage2_generators.futures import CancelledError
        from stage2_generators.loop import EventLoop
        from stage2_generators.tasks import Task, sleep

        def cancelled() -> Any:
            task = Task(crawler.polite(root))
            yield from sleep(0.01)  # polite has started its wait
            task.cancel()
            try:
                yield from task
            except CancelledError:
                return "cancelled"
            return "went on"

        loop = EventLoop()
        try:
            outcome = loop.run_until_complete(cancelled())
        finally:
            loop.close()
    else:
        import asyncio

        async def cancelled_asyncio() -> str:
            task = asyncio.create_task(crawler.polite(root))
            await asyncio.sleep(0.01)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return "cancelled"
            return "went on"

        outcome = asyncio.run(asyncio.wait_for(cancelled_asyncio(), 5))
    assert outcome == "cancelled", reason("delay.cancel-swallowed")
