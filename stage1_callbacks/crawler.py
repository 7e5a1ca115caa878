"""Stage 1 of 3: a Fetcher per URL, carried from callback to callback by the event loop.

Chapter: "Programming With Callbacks".  No coroutines yet: a fetch is a chain of
callbacks (connected, handshake for https, writable, readable), and whatever one step
needs from the step before it must be kept in the Fetcher's attributes.  What a
response means is decided in shared/crawling.py, exactly as in the other stages.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
from collections import defaultdict, deque
from collections.abc import Sequence
from selectors import EVENT_READ, EVENT_WRITE, SelectorKey

from shared import interrupt
from shared.crawling import LOGGER, BaseCrawler, CrawlResult, Options, Response, host_key
from shared.httpwire import NETWORK_ERRORS, ResponseParser, request_bytes
from shared.resolver import Answer
from shared.tls import WOULD_BLOCK, tls_socket
from stage1_callbacks.loop import Callback, EventLoop, TimerHandle

CHUNK = 64 * 1024  # bytes asked of recv() at a time


class Fetcher:
    """Fetch one URL, retrying on network errors, by a chain of callbacks.

    State saved by hand: a function on a thread would keep the socket, the parser
    and the try count in local variables; a callback returns to the loop after every
    step and loses its frame, so they live here, in attributes, between callbacks.
    """

    # The state a fetch saves by hand is these names and nothing more: with no __dict__
    # per Fetcher, a fetch in flight costs less (the chapter's memory argument, S3).
    __slots__ = (
        "crawler",
        "loop",
        "max_redirect",
        "parser",
        "sock",
        "timer",
        "tries",
        "unsent",
        "url",
    )

    def __init__(self, crawler: Crawler, url: str, max_redirect: int) -> None:
        """Remember the URL; nothing happens until :meth:`start` runs on the loop."""
        self.crawler = crawler
        self.loop = crawler.loop
        self.url = url
        self.max_redirect = max_redirect
        self.tries = 0
        self.sock: socket.socket | None = None  # the current try's socket, None between tries
        self.timer: TimerHandle | None = None  # the current try's timeout (first: its start)
        self.parser = ResponseParser()
        self.unsent = b""  # the part of the request the socket has not taken yet

    def start(self) -> None:
        """Begin a try: look the host up, then (in :meth:`_on_resolved`) start connecting."""
        self.tries += 1
        self.parser = ResponseParser()  # a fresh try starts from nothing
        self.unsent = request_bytes(self.url)
        self.timer = self.loop.call_later(self.crawler.options.timeout, self._on_timeout)
        # The continuation, once the name is known.  getaddrinfo blocks and has no file
        # descriptor the loop could wait for, so the resolver asks it in a thread, once per
        # host, and the loop calls us back when the answer is in (at once if it is known).
        self.crawler.resolver.resolve(self.url, self._on_resolved)

    def _on_resolved(self, answer: Answer) -> None:
        """The host is looked up: open a non-blocking socket and start connecting."""
        # A try waits for its name while its timeout runs and it has no socket yet.  Any
        # other time the answer is late: its try ended (timed out, Ctrl-C) while DNS
        # answered, and a new try asked again.  A callback must check; a Future is cancelled.
        if self.sock is not None or self.timer is None or self.timer.callback != self._on_timeout:
            return
        try:
            if isinstance(answer, OSError):
                raise answer  # an unknown host (gaierror): a failed try, as a refusal is
            family, sockaddr = answer
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            self.sock.setblocking(False)
            # A non-blocking connect raises BlockingIOError (EINPROGRESS) when all is
            # well: the connection has begun and will finish while we do other things.
            with contextlib.suppress(BlockingIOError):
                self.sock.connect(sockaddr)
        except OSError as exc:  # refused at once, unknown host, no file descriptors
            self._fail(exc)
            return
        # The continuation: "writable" means the connection is made, or has failed.
        self.loop.register(self.sock, EVENT_WRITE, self._on_connected)

    def _on_connected(self, key: SelectorKey, mask: int) -> None:
        """The connect finished: check how, then start the TLS handshake or the request."""
        assert self.sock is not None  # the loop runs a callback only while its socket is open
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._fail(OSError(err, os.strerror(err)))  # e.g. ConnectionRefusedError
            return
        if self.url.startswith("https:"):
            # The wrapped socket takes over the file descriptor, and the selector knows
            # sockets by theirs: unregister the plain one first.
            self.loop.unregister(self.sock)
            self.sock = tls_socket(self.sock, self.url, self.crawler.ssl_context)
            self._on_handshake(key, mask)
        else:
            self._on_writable(key, mask)

    def _on_handshake(self, key: SelectorKey, mask: int) -> None:
        """Take the TLS handshake one step further; once it is done, send the request.

        The handshake is a few round trips with the server, so it is one more state in
        the chain: this callback registers itself again until the TLS layer is done.
        """
        assert isinstance(self.sock, ssl.SSLSocket)
        try:
            self.sock.do_handshake()
        except ssl.SSLWantReadError:  # the TLS layer waits for the server's next message
            self.loop.register(self.sock, EVENT_READ, self._on_handshake)  # the continuation
            return
        except ssl.SSLWantWriteError:  # the TLS layer waits for room to send its own
            self.loop.register(self.sock, EVENT_WRITE, self._on_handshake)  # the continuation
            return
        except OSError as exc:  # e.g. SSLCertVerificationError: the certificate did not verify
            self._fail(exc)
            return
        self.crawler.handshake_done(self.url, self.sock)
        self.loop.register(self.sock, EVENT_WRITE, self._on_writable)  # the continuation

    def _on_writable(self, key: SelectorKey, mask: int) -> None:
        """Send what the socket takes; wait again for the rest, or for the response."""
        assert self.sock is not None
        try:
            sent = self.sock.send(self.unsent)
        except WOULD_BLOCK:
            return  # try again next time the socket is writable
        except OSError as exc:
            self._fail(exc)
            return
        self.unsent = self.unsent[sent:]  # state saved by hand: where the request stopped
        if self.unsent:
            self.loop.register(self.sock, EVENT_WRITE, self._on_writable)  # the continuation
        else:
            self.loop.register(self.sock, EVENT_READ, self._on_readable)  # the continuation

    def _on_readable(self, key: SelectorKey, mask: int) -> None:
        """Feed one recv()'s bytes to the parser; finish the try when the response is complete."""
        assert self.sock is not None
        try:
            while True:
                chunk = self.sock.recv(CHUNK)
                # An empty chunk means the peer closed: the end of the body, or a cut-off one.
                complete = self.parser.receive(chunk)
                # One recv() and back to the loop, even if more is waiting: fairness.  A server
                # that sends faster than we parse must not keep the loop from its timers (our
                # --timeout) and the other fetches.  Only bytes a TLS socket holds decrypted,
                # which select() cannot see, are read at once: at most the rest of one record.
                if complete or not (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
                    break
        except WOULD_BLOCK:
            # Nothing yet (a TLS record not complete).  The socket stays registered with
            # this very callback, so the loop calls it again when more bytes arrive.
            return
        except NETWORK_ERRORS as exc:
            self._fail(exc)
            return
        if complete:
            self._succeed(self.parser.response())

    def _on_timeout(self) -> None:
        """The try took longer than --timeout: abandon it as a failed try."""
        self.timer = None  # it has fired: nothing left to cancel
        self._fail(TimeoutError(f"no complete response within {self.crawler.options.timeout} s"))

    def _succeed(self, response: Response) -> None:
        """Close the try and hand the response to the crawler."""
        self.close()
        # Stack ripping bites here: if record_response() raises (a parse_links bug,
        # say), no try/except in Crawler.fetch() can catch it, because fetch()
        # returned long ago.  Only the loop sees it; see Crawler.callback_failed().
        items = self.crawler.record_response(self.url, self.max_redirect, response, self.tries)
        self.crawler.finished(self, items)

    def _fail(self, exc: Exception) -> None:
        """Close the failed try; start another, or record the failure after the last."""
        self.close()
        if self.crawler.failed_try(self.url, self.tries, exc):
            self.crawler.finished(self, [])
        else:
            self.crawler.polite(self)  # a new socket: a half-used connection is never reused

    def close(self) -> None:
        """End the current try: cancel its timer, unregister and close its socket."""
        # Every way out of a try comes through here: success, error, timeout, an
        # exception in a callback, and Ctrl-C (Crawler.cancel, or crawl's finally).
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.sock is not None:
            # Taken first: a second Ctrl-C raises between any two lines, and crawl's finally
            # closes every Fetcher again, which must not meet a socket closed but still held.
            sock, self.sock = self.sock, None
            self.loop.unregister(sock)  # before close(): the selector needs the fd
            sock.close()


class Crawler(BaseCrawler):
    """Crawl with at most --max-tasks Fetchers in flight, started from one queue."""

    stage = "stage1_callbacks"

    def crawl(self) -> None:
        """Run the event loop until nothing is queued and nothing is in flight."""
        self.loop = EventLoop(self.callback_failed)
        self.q: deque[tuple[str, int]] = deque(self.start_items())
        self.fetchers: dict[str, Fetcher] = {}  # url -> its Fetcher, while in flight
        self.parked: dict[str, list[tuple[str, int]]] = {}  # robots.txt URL -> pages waiting
        self.host_lines: dict[str, deque[tuple[str, int]]] = defaultdict(deque)  # host -> URLs
        self.interrupted = False
        with interrupt.caught() as ctrl_c, self.resolver:  # the resolver's self-pipe closes after
            if ctrl_c:  # Ctrl-C wakes the loop through a socket; cancel() runs as a callback
                self.loop.register(ctrl_c.reader, EVENT_READ, ctrl_c.on_press(self.cancel))
            # The self-pipe: a lookup's thread wakes the loop through it with the answer.
            self.loop.register(self.resolver.reader, EVENT_READ, self.resolver.on_readable)
            try:
                self.work()
                self.loop.run_until(lambda: not self.q and not self.fetchers)
            finally:
                # Normally empty by now; after a second Ctrl-C (or a bug) these must not leak.
                for fetcher in self.fetchers.values():
                    fetcher.close()
                if ctrl_c:
                    self.loop.unregister(ctrl_c.reader)  # the loop leaves no socket behind
                self.loop.unregister(self.resolver.reader)
                self.loop.close()

    def work(self) -> None:
        """Start fetches from the queue until --max-tasks are in flight or the queue is empty."""
        # Stages 2 and 3 keep --max-tasks workers waiting at the queue, but a waiting
        # worker is a paused function, which callbacks cannot express.  Instead, each
        # fetch that finishes calls work() again, to start the next ones.
        while self.q and len(self.fetchers) < self.max_tasks:
            url, max_redirect = self.q.popleft()
            if not self.host_slot(url, max_redirect):
                continue  # its host has --max-per-host fetches in flight: it waits in line
            robots_url = self.robots_txt(url)
            if robots_url is not None:  # park() may start robots.txt's fetch: it has room
                self.park(robots_url, url, max_redirect)
            elif self.begin(url):
                self.fetch(url, max_redirect)

    def host_slot(self, url: str, max_redirect: int) -> bool:
        """Tell whether url's host has a free --max-per-host slot; if not, line url up for one."""
        # Stages 2 and 3 wait on a Queue of tokens or a Semaphore, whose release wakes the
        # next waiter.  Callbacks cannot wait, so URLs of a full host are kept aside in the
        # host's line, and woken one at a time: by finished(), when a fetch of the host
        # ends, and here, by each URL that finds a slot free, in case it does not use it
        # after all (robots.txt forbids it, say): then the next in line may.
        line = self.host_lines[host_key(url)]
        if self.host_full(url):
            line.append((url, max_redirect))
            return False
        if line:
            self.q.appendleft(line.popleft())  # it comes back here next, and may find room
        return True

    def park(self, robots_url: str, url: str, max_redirect: int) -> None:
        """Keep a page aside until its origin's robots.txt is in; the first one fetches it."""
        # State saved by hand once more: stages 2 and 3 simply wait on a Task here.
        if robots_url not in self.parked:
            self.parked[robots_url] = []
            self.begin_robots(robots_url)
            self.fetch(robots_url, 0)  # a Fetcher like any other: it counts in --max-tasks
        self.parked[robots_url].append((url, max_redirect))

    def fetch(self, url: str, max_redirect: int) -> None:
        """Start fetching one URL; from here on, its Fetcher's callbacks carry it."""
        fetcher = self.fetchers[url] = Fetcher(self, url, max_redirect)
        self.polite(fetcher)

    def polite(self, fetcher: Fetcher) -> None:
        """Start fetcher's next try once --delay lets a request to its host start: a timer."""
        # Started from the loop, not from here: then every step of every fetch runs
        # as a loop callback, under the loop's exception handler, and a fetch that
        # fails at once cannot call work() from inside work().  Until it starts, its
        # timer is the start itself, so that close() can cancel that too.  Without
        # --delay the timer is due at once, as call_soon would schedule it.
        fetcher.timer = self.loop.call_later(self.delay_before(fetcher.url), fetcher.start)

    def finished(self, fetcher: Fetcher, items: list[tuple[str, int]]) -> None:
        """Take a finished Fetcher out of flight, queue what it found, start more fetches."""
        del self.fetchers[fetcher.url]
        self.q.extend(items)
        # If it was a robots.txt, the pages parked for it go back to the front of the queue.
        self.q.extendleft(reversed(self.parked.pop(fetcher.url, [])))
        if line := self.host_lines.get(host_key(fetcher.url)):  # a slot of its host is free
            self.q.appendleft(line.popleft())
        self.work()

    def cancel(self) -> None:
        """Ctrl-C: start nothing more and close every Fetcher in flight; the loop then ends.

        Their URLs stay in flight, so the result records them as interrupted.
        """
        self.interrupted = True
        self.q.clear()
        self.parked.clear()
        self.host_lines.clear()
        for fetcher in self.fetchers.values():
            fetcher.close()  # the same way out as every try: timer cancelled, socket closed
        self.fetchers.clear()

    def callback_failed(self, exc: Exception, callback: Callback) -> None:
        """Record an exception that escaped a Fetcher's callback, and let the crawl go on.

        The loop passes the callback; a bound method's ``__self__`` is its Fetcher, so
        we know which URL failed.  An exception in any other callback is a bug in the
        crawler itself, and is raised again.
        """
        fetcher = getattr(callback, "__self__", None)
        if not isinstance(fetcher, Fetcher) or fetcher.url not in self.fetchers:
            raise exc
        # Stack ripping, for all to see: this traceback starts in the loop and shows
        # the callback, but not work() or fetch(), which set the chain going.  (Stages 2
        # and 3 log theirs in record_bug; here the traceback is the lesson, so it is
        # logged where it is caught.)
        LOGGER.error("while fetching %r", fetcher.url, exc_info=exc)
        fetcher.close()
        self.record_failure(fetcher.url, 1, exc)  # one try, as record_bug counts it
        self.finished(fetcher, [])


def crawl(roots: Sequence[str], options: Options | None = None) -> CrawlResult:
    """Crawl from ``roots`` and return the result; Ctrl-C returns the partial result."""
    crawler = Crawler(roots, options)
    try:
        crawler.crawl()
    except KeyboardInterrupt:  # a second Ctrl-C: stop at once, keep what is known
        return crawler.result(interrupted=True)
    return crawler.result(interrupted=crawler.interrupted)
