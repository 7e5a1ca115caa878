"""Exercise s2-queue: getters that wait, a count of unfinished work, and join().

Task 1 is `Queue.get`, task 2 `Queue.task_done`, task 3 `Queue.join` (see
shared/tools/exercises/s2-queue/README.md). Each test makes a fresh stage 2 EventLoop and
drives it for a few seconds at most.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from reasons import reason
from stage2_loop import loop_fixture, raises, run  # noqa: F401 (the fixture `loop`)

from shared.observe import Observer
from stage2_generators.futures import CancelledError, Coroutine
from stage2_generators.loop import EventLoop
from stage2_generators.queues import Queue
from stage2_generators.tasks import Task, sleep

NOT_WOKEN = reason("s2-queue.getter-not-woken")

T = TypeVar("T")


# --- Task 1: Queue.get --------------------------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_get_returns_the_items_first_in_first_out(loop: EventLoop) -> None:
    """Items already in the queue come out in the order they were put, without a wait."""
    q: Queue[str] = Queue()
    for item in ("a", "b", "c"):
        q.put_nowait(item)
    assert [run(loop, q.get()) for _ in range(3)] == ["a", "b", "c"], reason("s2-queue.fifo")


@pytest.mark.task(taskno=1)
def test_get_waits_while_the_queue_is_empty(loop: EventLoop) -> None:
    """get() pauses its coroutine until put_nowait() brings an item."""
    q: Queue[str] = Queue()
    events: list[str] = []

    def producer() -> Coroutine[None]:
        yield from sleep(0.01)
        events.append("put")
        q.put_nowait("item")

    def consumer() -> Coroutine[str]:
        Task(producer())
        item = yield from q.get()
        events.append("got")
        return item

    item = run(loop, consumer(), explain=lambda: NOT_WOKEN)
    assert item == "item", reason("s2-queue.returned", item=repr(item))
    assert events == ["put", "got"], reason("s2-queue.events", events=events)


@pytest.mark.task(taskno=1)
def test_a_getter_that_finds_the_item_gone_waits_again(loop: EventLoop) -> None:
    """Two getters wait, one item comes: one getter has it, the other waits for the next."""
    q: Queue[int] = Queue()
    got: list[int] = []

    def getter() -> Coroutine[None]:
        got.append((yield from q.get()))

    def main() -> Coroutine[None]:
        first, second = Task(getter()), Task(getter())
        yield from sleep(0)  # both getters now wait
        q.put_nowait(1)
        yield from sleep(0.01)
        assert got == [1], reason("s2-queue.one-getter", got=got)
        assert [first.done(), second.done()].count(True) == 1, reason("s2-queue.if-not-while")
        q.put_nowait(2)
        yield from first
        yield from second

    run(loop, main())
    assert got == [1, 2], reason("s2-queue.each-item", got=got)


@pytest.mark.task(taskno=1)
def test_a_cancelled_getter_does_not_strand_an_item(loop: EventLoop) -> None:
    """A getter cancelled right after put_nowait() woke it leaves the item to another."""
    q: Queue[str] = Queue()
    got: list[tuple[str, str]] = []

    def getter(name: str) -> Coroutine[None]:
        got.append((name, (yield from q.get())))

    first, second = Task(getter("first")), Task(getter("second"))

    def main() -> Coroutine[None]:
        yield from sleep(0)  # both getters now wait
        q.put_nowait("x")  # wakes the getters...
        first.cancel()  # ...and the first is cancelled before it can run
        yield from second

    run(loop, main())
    assert got == [("second", "x")], reason("s2-queue.lost-item", got=got)
    assert first.cancelled(), reason("s2-queue.cancelled-getter")


# --- Task 2: Queue.task_done --------------------------------------------------------------------


def done(q: Queue[int]) -> None:
    """q.task_done() for an item put and not yet done: a ValueError here is a wrong refusal."""
    try:
        q.task_done()
    except ValueError as exc:
        pytest.fail(reason("s2-queue.done-refused", error=repr(exc)))


@pytest.mark.task(taskno=2)
def test_task_done_counts_each_item_once(loop: EventLoop) -> None:
    """One task_done() per item put; one more is a bug, and says so with ValueError."""
    q: Queue[int] = Queue()
    too_many = reason("s2-queue.too-many-done")
    with raises(ValueError, too_many):
        q.task_done()  # nothing was put
    q.put_nowait(1)
    q.put_nowait(2)
    assert run(loop, q.get()) == 1, reason("s2-queue.first-item")
    done(q)
    assert run(loop, q.get()) == 2, reason("s2-queue.second-item")
    done(q)
    with raises(ValueError, too_many):
        q.task_done()


@pytest.mark.task(taskno=2)
def test_the_count_follows_put_not_get(loop: EventLoop) -> None:
    """task_done() may run before get(): it counts items put and not yet done, not items held."""
    q: Queue[int] = Queue()
    q.put_nowait(1)
    done(q)  # allowed: one item was put
    with raises(ValueError, reason("s2-queue.too-many-done")):
        q.task_done()
    assert run(loop, q.get()) == 1, reason("s2-queue.item-stays")


# --- Task 3: Queue.join (and task_done waking it) ------------------------------------------


@pytest.mark.task(taskno=3)
def test_join_returns_at_once_when_no_work_is_unfinished(loop: EventLoop) -> None:
    """Nothing put, or everything done: join() has nothing to wait for."""
    q: Queue[int] = Queue()
    at_once = reason("s2-queue.join-at-once")
    run(loop, q.join(), explain=lambda: at_once)
    q.put_nowait(1)
    run(loop, q.get())
    q.task_done()
    run(loop, q.join(), explain=lambda: at_once)


@pytest.mark.task(taskno=3)
def test_join_wakes_on_the_last_task_done_and_not_before(loop: EventLoop) -> None:
    """join() returns when the count of unfinished items reaches zero, not before."""
    q: Queue[int] = Queue()
    for i in range(3):
        q.put_nowait(i)
    joined: list[str] = []

    def joiner() -> Coroutine[None]:
        yield from q.join()
        joined.append("joined")

    def main() -> Coroutine[None]:
        waiting = Task(joiner())
        for _ in range(3):
            yield from sleep(0)  # give the joiner every chance to run
            assert joined == [], reason("s2-queue.join-early")
            yield from q.get()
            q.task_done()
        yield from waiting
        assert joined == ["joined"], reason("s2-queue.join-late")

    never_woken = reason("s2-queue.join-never-woken")
    run(loop, main(), explain=lambda: never_woken)


@pytest.mark.task(taskno=3)
def test_join_waits_again_when_new_work_arrives(loop: EventLoop) -> None:
    """Footnote 9: the count went to zero once, then new work makes join() wait again."""
    q: Queue[int] = Queue()
    q.put_nowait(1)
    run(loop, q.get())
    q.task_done()
    run(loop, q.join())  # zero: returns at once
    q.put_nowait(2)
    joiner = Task(q.join())

    def main() -> Coroutine[bool]:
        yield from sleep(0.01)
        return joiner.done()

    assert run(loop, main()) is False, reason("s2-queue.join-new-item")
    assert run(loop, q.get()) == 2, reason("s2-queue.second-item")
    q.task_done()
    run(loop, joiner)


@pytest.mark.task(taskno=3)
def test_join_waits_for_an_item_taken_but_not_yet_done(loop: EventLoop) -> None:
    """The chapter's warning: an item a worker took is unfinished until its task_done(),
    though the queue is empty. join() counts unfinished tasks, not the items held."""
    q: Queue[int] = Queue()
    q.put_nowait(1)
    assert run(loop, q.get()) == 1, reason("s2-queue.the-item")
    joiner = Task(q.join())

    def main() -> Coroutine[bool]:
        yield from sleep(0.01)
        return joiner.done()

    assert run(loop, main()) is False, reason("s2-queue.join-empty")
    q.task_done()
    run(loop, joiner)


@pytest.mark.task(taskno=3)
def test_cancelling_one_joiner_leaves_the_others_waiting(loop: EventLoop) -> None:
    """Cancelling one task in join() must not cancel another one's wait: each join()
    waits on its own future."""
    q: Queue[int] = Queue()
    q.put_nowait(1)
    quitter, stayer = Task(q.join()), Task(q.join())

    def main() -> Coroutine[None]:
        yield from sleep(0)  # both joiners now wait
        quitter.cancel()
        yield from sleep(0)  # one turn of the loop: the cancelled joiner's last step
        assert quitter.cancelled(), reason("s2-queue.joiner-cancelled")
        assert not stayer.done(), reason("s2-queue.other-joiner")
        yield from q.get()
        try:
            q.task_done()  # a joiner's future was cancelled: this wakes the others only
        except Exception as error:
            said = f"{type(error).__name__}: {error}"
            pytest.fail(reason("s2-queue.task-done-after-a-cancelled-joiner", error=said))
        yield from stayer

    run(loop, main())


class Steps(Observer):
    """Someone watching the loop (as --trace does): counts the steps of each task, by name."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}

    def resume(self, task: Any, value: Any) -> None:
        self.steps[task.name] = self.steps.get(task.name, 0) + 1


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("get", marks=pytest.mark.task(taskno=1), id="get"),
        pytest.param("join", marks=pytest.mark.task(taskno=3), id="join"),
    ],
)
def test_a_coroutine_waiting_in_the_queue_costs_no_steps(where: str) -> None:
    """A getter or a joiner sleeps on its Future: two steps for the whole wait, one to
    start and one when woken, however long the wait (the loop's timer decides it)."""
    steps = Steps()
    loop = EventLoop(steps)
    try:
        q: Queue[int] = Queue()
        if where == "get":
            waiting = Task(q.get(), name="waiting")
            loop.call_later(0.05, q.put_nowait, 1)
        else:
            q.put_nowait(1)
            waiting = Task(q.join(), name="waiting")
            loop.call_later(0.05, q.task_done)
        run(loop, waiting)
    finally:
        loop.close()
    count = steps.steps.get("waiting", 0)
    assert count == 2, reason("s2-queue.polled", where=where, steps=count)


@pytest.mark.task(taskno=3)
def test_workers_and_join_visit_every_node_the_chapters_way(loop: EventLoop) -> None:
    """The crawler's pattern on a graph: workers get, put new nodes, task_done; main joins."""
    graph = {n: [(n * 3 + k) % 40 for k in (1, 2, 5)] for n in range(40)}
    seen, visited = {0}, []
    q: Queue[int] = Queue()
    q.put_nowait(0)

    def work() -> Coroutine[None]:
        while True:
            node = yield from q.get()
            try:
                yield from sleep(0.001 * (node % 3))  # "fetching" takes a while
                visited.append(node)
                for link in graph[node]:
                    if link not in seen:
                        seen.add(link)
                        q.put_nowait(link)
            finally:
                q.task_done()

    def crawl() -> Coroutine[None]:
        workers = [Task(work()) for _ in range(4)]
        yield from q.join()
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with pytest.raises(CancelledError):
                yield from worker

    run(loop, crawl())
    assert sorted(visited) == sorted(seen), reason("s2-queue.not-every-node")
    assert len(visited) == len(set(visited)) > 10, reason("s2-queue.visited-twice")
