"""Stage 2's crawler written with `async def` and `await`, run on stage 2's own loop.

The support file of the exercise s2-await (it is not part of stage 2, and counts in no
stage's budget). `crawl`, `work`, `fetch` and `request` are stage 2's, line for line, with
`async def` for a generator function and `await` for `yield from`. What they await is
stage 2's: its Futures and Tasks (awaitable once Future has `__await__`), and its generator
coroutines (Queue.get, sock_recv, sleep ...) through :func:`wait`, the bridge from a
generator to `await`. Nothing of asyncio runs here.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import types
from collections.abc import Generator, Sequence
from typing import Any, TypeVar

from shared.crawling import CrawlResult, Options, Response
from shared.httpwire import NETWORK_ERRORS, ResponseParser, request_bytes
from shared.resolver import Destination
from shared.tls import tls_socket
from stage2_generators.crawler import Crawler
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.queues import Queue
from stage2_generators.sockets import sock_connect, sock_handshake, sock_recv, sock_sendall
from stage2_generators.tasks import Task, timeout

T = TypeVar("T")


@types.coroutine
def wait(coroutine: Coroutine[T]) -> Generator[Future[Any], Any, T]:
    """Await one of stage 2's generator coroutines from an `async def`: `await wait(q.get())`.

    An `async def` may await only an awaitable, and a plain generator is not one.
    types.coroutine marks this generator function so that `await` accepts what it
    returns (asyncio's own generator coroutines were marked so, before Python 3.5 had
    `async def`). Its one line is a `yield from`: the Futures the generator yields go
    up to the Task unchanged, and its return value comes back as the value of `await`.
    """
    return (yield from coroutine)


class AsyncCrawler(Crawler):
    """Stage 2's Crawler with `async def` coroutines: the same steps, the same loop."""

    async def crawl(self) -> None:  # type: ignore[override]
        """Run the workers until every queued URL is done, then cancel them."""
        self.q: Queue[tuple[str, int]] = Queue()
        for item in self.start_items():
            self.q.put_nowait(item)
        self.robots_tasks: dict[str, Task[None]] = {}
        self.host_slots: dict[str, Queue[None]] = {}
        workers = [Task(self.work(), name=f"worker-{i}") for i in range(self.max_tasks)]  # type: ignore[arg-type]
        try:
            await wait(self.q.join())  # suspends: until task_done() matched every put
        finally:
            for worker in workers:
                worker.cancel()
            for worker in workers:
                with contextlib.suppress(CancelledError):
                    await worker  # a Task is a Future: awaitable, as Future is

    async def work(self) -> None:  # type: ignore[override]
        """Take URLs from the queue and fetch them, forever (until cancelled)."""
        while True:
            url, max_redirect = await wait(self.q.get())  # suspends: until a URL is queued
            try:
                with await wait(self.host_slot(url)):  # suspends: for a slot of url's host
                    await wait(self.robots(url))  # robots() makes a Task of our fetch()
                    if self.begin(url):
                        await self.fetch(url, max_redirect)
            except Exception as exc:
                self.record_bug(url, exc)
            finally:
                self.q.task_done()

    async def fetch(self, url: str, max_redirect: int) -> None:  # type: ignore[override]
        """Fetch one URL, trying again on network errors, and queue what it leads to."""
        for tries in range(1, self.max_tries + 1):
            try:
                await wait(self.polite(url))  # suspends: until --delay lets the request go
                with timeout(self.options.timeout):  # the Task running us is the one cancelled
                    response = await self.request(url)
                break
            except NETWORK_ERRORS as exc:
                if self.failed_try(url, tries, exc):
                    return
        for item in self.record_response(url, max_redirect, response, tries):
            self.q.put_nowait(item)

    async def request(self, url: str) -> Response:  # type: ignore[override]
        """GET a URL on a new connection and read the response, up to the size cap."""
        family, sockaddr = await wait(self.resolver.resolved(url, Future[Destination]()))
        with socket.socket(family, socket.SOCK_STREAM) as plain:
            plain.setblocking(False)
            await wait(sock_connect(plain, sockaddr))  # suspends: until connected
            with tls_socket(plain, url, self.ssl_context) as sock:
                if isinstance(sock, ssl.SSLSocket):
                    await wait(sock_handshake(sock))
                    self.handshake_done(url, sock)
                await wait(sock_sendall(sock, request_bytes(url)))  # suspends: while sending
                parser = ResponseParser()
                while not parser.done:
                    chunk = await wait(sock_recv(sock, 64 * 1024))  # suspends: until readable
                    parser.receive(chunk)
                return parser.response()


def crawl(roots: Sequence[str], options: Options | None = None) -> CrawlResult:
    """Crawl from ``roots`` with the `async def` crawler on stage 2's loop; return the result."""
    crawler = AsyncCrawler(roots, options)
    loop = EventLoop()
    loop.add_reader(crawler.resolver.reader, crawler.resolver.on_readable)  # lookups' self-pipe
    main = Task(crawler.crawl(), name="crawl")  # type: ignore[arg-type]
    with crawler.resolver:
        try:
            loop.run_until_complete(main)
        finally:
            loop.close()
    return crawler.result()
