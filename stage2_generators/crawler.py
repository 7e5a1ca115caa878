"""Stage 2 of 3: generator coroutines on a hand-made Future, Task, event loop and queue.

Chapter: "Coordinating Coroutines".  Changed from stage 1: callbacks and state saved by
hand -> coroutines that keep their state in local variables and pause at each `yield from`.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Sequence

from shared import interrupt
from shared.crawling import BaseCrawler, CrawlResult, Options, Response, host_key, on_exit
from shared.httpwire import NETWORK_ERRORS, ResponseParser, request_bytes
from shared.resolver import Destination
from shared.tls import tls_socket
from stage2_generators.futures import CancelledError, Coroutine, Future
from stage2_generators.loop import EventLoop
from stage2_generators.queues import Queue
from stage2_generators.sockets import sock_connect, sock_handshake, sock_recv, sock_sendall
from stage2_generators.tasks import Task, sleep, timeout


class Crawler(BaseCrawler):
    """Crawl with --max-tasks worker coroutines sharing one queue."""

    stage = "stage2_generators"

    def crawl(self) -> Coroutine[None]:
        """Run the workers until every queued URL is done, then cancel them."""
        self.q: Queue[tuple[str, int]] = Queue()
        for item in self.start_items():
            self.q.put_nowait(item)
        self.robots_tasks: dict[str, Task[None]] = {}  # robots.txt URL -> the Task fetching it
        self.host_slots: dict[str, Queue[None]] = {}  # host -> a token per fetch it may have
        workers = [Task(self.work(), name=f"worker-{i}") for i in range(self.max_tasks)]
        try:
            yield from self.q.join()  # suspends: until task_done() matched every put
        finally:
            # The workers are all paused at q.get(): cancelling them ends the crawl.
            for worker in workers:
                worker.cancel()
            for worker in workers:
                with contextlib.suppress(CancelledError):
                    yield from worker  # suspends: until the worker has run its finally blocks

    def work(self) -> Coroutine[None]:
        """Take URLs from the queue and fetch them, forever (until cancelled)."""
        while True:
            url, max_redirect = yield from self.q.get()  # suspends: until a URL is queued
            try:
                # suspends: while the URL's host has --max-per-host fetches in flight.  If the
                # page must fetch its origin's robots.txt, it does so in this slot too.
                with (yield from self.host_slot(url)):
                    yield from self.robots(url)  # suspends: until the origin's robots.txt is in
                    if self.begin(url):
                        yield from self.fetch(url, max_redirect)
            except Exception as exc:
                # A bug, or a page nobody foresaw: record it and keep crawling.  The
                # traceback it logs shows the whole coroutine chain, no stack ripping here.
                self.record_bug(url, exc)
            finally:
                self.q.task_done()

    def host_slot(self, url: str) -> Coroutine[contextlib.AbstractContextManager[None]]:
        """Take one of the --max-per-host slots of url's host, waiting for one: a with holds it."""
        # Used as ``with (yield from self.host_slot(url)):``, the way asyncio's locks were
        # before ``async with`` existed: the wait is in the yield from, and the end of the
        # with block, however it ends, gives the slot back.  A host's slots are a Queue
        # holding a token for each: a Queue of tokens is a semaphore (stage 3 uses asyncio's).
        host = host_key(url)
        if host not in self.host_slots:
            self.host_slots[host] = Queue()
            for _ in range(self.max_per_host):
                self.host_slots[host].put_nowait(None)
        yield from self.host_slots[host].get()  # suspends: until the host has a token left
        return on_exit(self.host_slots[host].put_nowait, None)  # the token goes back

    def robots(self, url: str) -> Coroutine[None]:
        """Wait until the robots.txt of url's origin is known; the first page fetches it."""
        if (robots_url := self.robots_txt(url)) is not None:
            if robots_url not in self.robots_tasks:
                self.begin_robots(robots_url)
                # One Task per origin, in the place of this worker: the pages wait for it.
                self.robots_tasks[robots_url] = Task(self.fetch(robots_url, 0), name="robots.txt")
            yield from self.robots_tasks[robots_url]  # suspends: until robots.txt is in

    def fetch(self, url: str, max_redirect: int) -> Coroutine[None]:
        """Fetch one URL, trying again on network errors, and queue what it leads to."""
        for tries in range(1, self.max_tries + 1):
            try:
                yield from self.polite(url)  # suspends: until --delay lets the request go
                with timeout(self.options.timeout):  # time up: request() cancelled
                    response = yield from self.request(url)  # suspends: until the response is in
                break
            except NETWORK_ERRORS as exc:
                if self.failed_try(url, tries, exc):  # the last try: url is recorded as failed
                    return
        for item in self.record_response(url, max_redirect, response, tries):
            self.q.put_nowait(item)

    def polite(self, url: str) -> Coroutine[None]:
        """Wait until --delay lets a request to url's host start; at once without --delay."""
        if delay := self.delay_before(url):
            yield from sleep(delay)  # suspends: until the host's turn comes

    def request(self, url: str) -> Coroutine[Response]:
        """GET a URL on a new connection and read the response, up to the size cap."""
        # getaddrinfo blocks: a thread asks it, once per host, and the loop settles a Future
        # of ours with its answer when the thread hands it over (at once if the host is known).
        family, sockaddr = yield from self.resolver.resolved(url, Future[Destination]())
        # The socket is a local variable: whatever happens at a yield from (an error, a
        # cancel when time is up), leaving this block closes it.  No state saved by hand.
        with socket.socket(family, socket.SOCK_STREAM) as plain:
            plain.setblocking(False)
            yield from sock_connect(plain, sockaddr)  # suspends: until connected
            with tls_socket(plain, url, self.ssl_context) as sock:  # https: the socket, wrapped
                if isinstance(sock, ssl.SSLSocket):
                    yield from sock_handshake(sock)  # suspends: while the handshake goes on
                    self.handshake_done(url, sock)
                yield from sock_sendall(sock, request_bytes(url))  # suspends: while sending
                parser = ResponseParser()
                while not parser.done:
                    chunk = yield from sock_recv(sock, 64 * 1024)  # suspends: until readable
                    # An empty chunk means the peer closed: the end of the body, or a cut-off one.
                    parser.receive(chunk)
                return parser.response()


def crawl(roots: Sequence[str], options: Options | None = None) -> CrawlResult:
    """Crawl from ``roots`` and return the result; Ctrl-C returns the partial result."""
    crawler = Crawler(roots, options)
    loop = EventLoop()
    loop.add_reader(crawler.resolver.reader, crawler.resolver.on_readable)  # lookups' self-pipe
    main = Task(crawler.crawl(), name="crawl")
    with interrupt.caught() as ctrl_c, crawler.resolver:  # the resolver's self-pipe closes after
        if ctrl_c:  # as asyncio.Runner does: Ctrl-C wakes the loop, which cancels the main task
            loop.add_reader(ctrl_c.reader, ctrl_c.on_press(main.cancel))
        try:
            loop.run_until_complete(main)
        except (CancelledError, KeyboardInterrupt):  # a first Ctrl-C, or a second one
            return crawler.result(interrupted=True)
        finally:
            loop.close()
    return crawler.result()
