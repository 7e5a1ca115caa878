"""Stage 2 queue ("Coordinating Coroutines"): join() replaces the chapter's global urls_todo set.

The main coroutine waits in join() until task_done() has matched every put, as queue.Queue.
"""

from collections import deque
from typing import Generic

from .futures import Coroutine, Future, T, wake_all


# asyncio's Queue also has a maxsize and a put() coroutine that waits while the queue is full,
# and get_nowait(), qsize() and empty(). The crawler's queue is unbounded and its workers always
# wait in get(), so we left them out.
class Queue(Generic[T]):
    """A first-in, first-out queue that counts unfinished work for join()."""

    def __init__(self) -> None:
        self._queue: deque[T] = deque()  # the items; the private names are asyncio's
        self._getters: list[Future[None]] = []  # one future per coroutine in get()
        self._joiners: list[Future[None]] = []  # one per join(); asyncio: an Event, _finished
        self._unfinished_tasks = 0

    def put_nowait(self, item: T) -> None:
        """Add an item, count it as unfinished work and wake the waiting getters."""
        self._queue.append(item)
        self._unfinished_tasks += 1
        # asyncio wakes exactly one getter, and must pass the wake-up on if that getter is
        # cancelled before it runs. We wake them all: then a cancelled getter cannot strand an
        # item, and get()'s `while` loop sends the ones that find the queue empty back to wait.
        # The cost is one step per idle worker when items trickle in one at a time.
        wake_all(self._getters)

    def get(self) -> Coroutine[T]:
        """Remove and return the next item, waiting while the queue is empty."""
        # A loop, not an if: between our wake-up and our turn to run, another coroutine may
        # take the item; then we simply wait again.
        while not self._queue:
            getter: Future[None] = Future()
            self._getters.append(getter)
            yield from getter  # suspends: waits for put_nowait() to wake us
        return self._queue.popleft()

    def task_done(self) -> None:
        """Count one item as processed; raise ValueError if called more often than put_nowait."""
        if self._unfinished_tasks <= 0:
            raise ValueError("task_done() called more times than there were items put")
        self._unfinished_tasks -= 1
        if self._unfinished_tasks == 0:
            wake_all(self._joiners)

    def join(self) -> Coroutine[None]:
        """Wait until every item put in the queue has been matched by task_done()."""
        # Footnote 9 of the chapter: asyncio's Queue signals join() with an Event, because a
        # Future cannot go back from done to pending and the signal must re-arm whenever new
        # work arrives. We avoid re-arming altogether: each join() call that has to wait makes
        # a fresh Future, and task_done() resolves them all when the count reaches zero. One
        # Future per waiter also means cancelling one waiting task cannot cancel the others'.
        if self._unfinished_tasks:
            joiner: Future[None] = Future()
            self._joiners.append(joiner)
            yield from joiner  # suspends: waits for the last task_done()
