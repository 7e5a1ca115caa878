"""The baseline: the chapter's "traditional approach", a pool of threads on blocking sockets.

Chapter: "The Traditional Approach", and "Imagine if the workers were threads" in
"Coordinating Coroutines".  Each of --max-tasks threads downloads one page at a time on a
blocking socket, taking URLs from the standard library's synchronized ``queue.Queue``;
the main thread waits on ``Queue.join``.  The HTTP is shared/httpwire.py with
``Connection: close``, exactly what stages 1 and 2 speak, so the comparison measures the
concurrency style and nothing else.

What threads cost in code is one lock: any thread may be interrupted between any two
bytecodes, so every call into BaseCrawler's bookkeeping (seen URLs, records, the page
budget) runs while holding it.  Without it two threads could both find a link unseen and
queue it twice: the race the chapter describes.

``python -m shared.tools.bench.threaded [ROOT ...]`` takes every stage's command line.
"""

from __future__ import annotations

import queue
import socket
import sys
import threading
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

from shared import observe
from shared.crawling import LOGGER, BaseCrawler, Options
from shared.httpwire import ResponseParser, WireError, address, request_bytes
from shared.report import CrawlResult
from shared.resolver import Destination, lookup
from shared.responses import Response
from shared.tools.cli import main
from shared.tools.instruments.connections import tell_connected

# What a try can fail with: refused, reset, unknown host, timed out (all OSError; a socket
# timeout is TimeoutError), and a response that is not valid HTTP or ends too soon.
NETWORK_ERRORS = (OSError, WireError)

CHUNK = 64 * 1024  # bytes asked of recv() at a time, as in stages 1 and 2


class Crawler(BaseCrawler):
    """Crawl with --max-tasks worker threads sharing one queue and one lock."""

    stage = "threaded"

    def crawl(self) -> None:
        """Run the worker threads until every queued URL is done, then stop them."""
        self.lock = threading.Lock()  # guards everything BaseCrawler keeps
        self.stopping = False  # set after Ctrl-C: workers then leave the crawler alone
        self.addresses: dict[tuple[str, int], Destination] = {}  # (host, port) -> where
        self.robots_fetched: dict[str, threading.Event] = {}  # robots.txt URL -> set when in
        # None is the signal to stop: a worker blocked in get() cannot be cancelled.
        self.q: queue.Queue[tuple[str, int] | None] = queue.Queue()
        for item in self.start_items():
            self.q.put(item)
        # Started all at once, like the other stages' workers; a real pool would grow on
        # demand because threads are expensive (the chapter's point, measured by bench.py).
        workers = [
            threading.Thread(target=self.work, name=f"worker-{i}", daemon=True)
            for i in range(self.max_tasks)
        ]
        for worker in workers:
            worker.start()
        self.q.join()  # blocks: until task_done() matched every put (Ctrl-C interrupts it)
        for _ in workers:
            self.q.put(None)
        for worker in workers:
            worker.join()

    def work(self) -> None:
        """Take URLs from the queue and fetch them, until the stop signal arrives."""
        while True:
            item = self.q.get()  # blocks: until a URL is queued
            try:
                if item is None:
                    return
                url, max_redirect = item
                self.robots(url)  # blocks: until the origin's robots.txt is known
                with self.lock:
                    claimed = not self.stopping and self.begin(url)
                if claimed:
                    self.fetch(url, max_redirect)
            except Exception as exc:
                # A bug, or a page nobody foresaw: record it and keep crawling.  A thread's
                # traceback shows the whole call chain, as a coroutine's does.
                assert item is not None
                with self.lock:
                    if not self.stopping:
                        self.record_failure(item[0], 1, exc)
                LOGGER.error("while fetching %r", item[0], exc_info=exc)
            finally:
                self.q.task_done()

    def robots(self, url: str) -> None:
        """Wait until the robots.txt of url's origin is known; the first page fetches it."""
        with self.lock:
            robots_url = self.robots_txt(url)
            if robots_url is None:
                return
            first = robots_url not in self.robots_fetched
            if first:
                self.begin_robots(robots_url)
                self.robots_fetched[robots_url] = threading.Event()
            fetched = self.robots_fetched[robots_url]
        if first:
            try:
                self.fetch(robots_url, 0)  # in the place of the page: the others wait for it
            finally:
                fetched.set()
        else:
            fetched.wait()  # blocks: until the thread fetching robots.txt is done

    def fetch(self, url: str, max_redirect: int) -> None:
        """Fetch one URL, trying again on network errors, and queue what it leads to."""
        tries = 0
        while True:
            tries += 1
            try:
                response = self.request(url)  # blocks: until the whole response is in
                break
            except NETWORK_ERRORS as exc:
                with self.lock:
                    if self.stopping:
                        return
                    if self.give_up(tries, exc):
                        self.record_failure(url, tries, exc)
                        return
                    self.retrying(url, tries, exc)
        with self.lock:
            if self.stopping:
                return
            items = self.record_response(url, max_redirect, response, tries)
        # Queued before this URL's task_done(), so join() cannot return in between.
        for item in items:
            self.q.put(item)

    def request(self, url: str) -> Response:
        """GET a URL on a new connection and read the response, up to the size cap.

        --timeout bounds the whole request, connect to last byte, as in the other
        stages: each blocking call may wait only for what is left of it.
        """
        deadline = time.monotonic() + self.options.timeout
        # Each host is looked up once, in the thread that first needs it (it blocks only that
        # thread: the others go on).  The cache is one dict, and the GIL makes each look-up
        # and store atomic: two threads that miss at once both ask DNS and store the same
        # answer.  That harmless race is cheaper than a lock every fetch would queue up behind.
        if (host_port := address(url)) not in self.addresses:
            self.addresses[host_port] = lookup(*host_port)  # blocks: until DNS answers
        family, sockaddr = self.addresses[host_port]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(remaining(deadline))
            sock.connect(sockaddr)  # blocks: until connected
            if observer := observe.observer:  # someone watches (--timeline): connecting is over
                with self.lock:
                    tell_connected(observer, url)
            if url.startswith("https:"):
                # With blocking sockets TLS is one call: the handshake simply blocks too.
                host = urlsplit(url).hostname
                tls = self.ssl_context.wrap_socket(sock, server_hostname=host)  # blocks: handshake
                with self.lock:
                    self.handshake_done(url, tls)
                conn: socket.socket = tls
            else:
                conn = sock
            with conn:
                conn.sendall(request_bytes(url))  # blocks: while sending
                parser = ResponseParser()
                while True:
                    conn.settimeout(remaining(deadline))
                    chunk = conn.recv(CHUNK)  # blocks: until bytes arrive or the peer closes
                    if parser.receive(chunk):  # an empty chunk: the peer closed
                        return parser.response()

    def stop(self) -> CrawlResult:
        """After Ctrl-C: mark the crawl stopping and return the partial result.

        A thread cannot be cancelled from outside, as a coroutine can.  Each one
        finishes the request it is blocked in (--timeout at most) and, finding
        ``stopping`` set, records nothing more; they are daemon threads, so a
        program that ends does not wait for them.
        """
        with self.lock:
            self.stopping = True
            return self.result(interrupted=True)


def remaining(deadline: float) -> float:
    """Return the seconds left until ``deadline``; TimeoutError once none are left."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no complete response within --timeout")
    return left


def crawl(roots: Sequence[str], options: Options | None = None) -> CrawlResult:
    """Crawl from ``roots`` and return the result; Ctrl-C returns the partial result."""
    crawler = Crawler(roots, options)
    try:
        crawler.crawl()
    except KeyboardInterrupt:
        # Only the main thread sees Ctrl-C; the workers are daemons and are told to stop.
        return crawler.stop()
    return crawler.result()


if __name__ == "__main__":
    sys.exit(main("shared.tools.bench.threaded", crawl))
