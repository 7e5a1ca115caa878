"""Stage 3 of 3: asyncio coroutines, an asyncio.Queue and aiohttp.

Chapter: "Coordinating Coroutines".  Changed from stage 2: ``yield from`` -> ``await``,
our Queue -> asyncio.Queue, our sockets, TLS handshake and shared/httpwire.py -> an
aiohttp session.  What a response means is decided in shared/crawling.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import ContextVar

import aiohttp
from aiohttp.abc import ResolveResult
from yarl import URL

from shared import USER_AGENT, interrupt
from shared.crawling import BaseCrawler, CrawlResult, Options, Response, host_key
from shared.httpwire import MAX_FIELD, WireError, checked_head
from shared.observe import connection_traces
from shared.resolver import lookup, small_reads
from shared.responses import MAX_BODY

# What a try can fail with: aiohttp's errors (refused, reset, a certificate that does not
# verify, a body shorter than its Content-Length, a garbage status line), a head that
# stages 1 and 2 refuse (WireError, from checked_head) and the timeout.
NETWORK_ERRORS = (aiohttp.ClientError, WireError, TimeoutError)

# Whether the request being sent went out on a connection taken from aiohttp's pool.  aiohttp
# tells its trace configs (pool_trace) in the task that sends the request, and a ContextVar
# is that task's own: each worker has its answer, however many send at once.
REUSED: ContextVar[bool] = ContextVar("REUSED", default=False)


def pool_trace() -> aiohttp.TraceConfig:
    """A trace config that sets REUSED each time a request has its connection."""

    async def new(*_: object) -> None:
        REUSED.set(False)

    async def from_pool(*_: object) -> None:
        REUSED.set(True)

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(new)
    trace.on_connection_reuseconn.append(from_pool)
    return trace


class HungUp(aiohttp.ClientConnectionError):
    """The server hung up on a request it saw: one on a new connection, or half answered."""


async def stale_is_free(
    request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
) -> aiohttp.ClientResponse:
    """Send a request (a middleware of the session); a pooled connection found dead costs nothing.

    A server may close an idle kept-alive connection whenever it likes, without a word; a
    request sent on it dies before any byte of answer, and the server never saw it.  So such a
    request goes again, on the next connection (each dead one is closed, never pooled again:
    a new one at the latest after the pool).  The same death on a new connection means the
    server took the request and hung up: a try lost, which --max-tries counts.  HungUp
    carries it past aiohttp, which would quietly send that request a second time itself.
    """
    while True:
        REUSED.set(False)  # until aiohttp says it took a connection from the pool
        try:
            return await handler(request)  # suspends: connect (or reuse), send, read the head
        except aiohttp.ClientConnectorError:
            raise  # no connection at all: nothing was sent, and aiohttp sends nothing again
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            # aiohttp's exc.message: the part of a head that came before the close, if any.
            answered = isinstance(getattr(exc, "message", ""), aiohttp.http.RawResponseMessage)
            if answered or not REUSED.get():
                raise HungUp(f"{type(exc).__name__}: {exc}") from exc


class FirstAddress(aiohttp.ThreadedResolver):
    """Resolve as stages 1 and 2 do: shared/resolver.py's lookup, in a thread."""

    # aiohttp's own would hand the connector every address, to try in turn (see REAL_WEB.md).
    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[ResolveResult]:
        """Only the first address of host; suspends: while DNS answers, in a thread."""
        fam, (ip, *_) = await asyncio.to_thread(lookup, host, port)
        return [ResolveResult(hostname=host, host=ip, port=port, family=fam, proto=0, flags=0)]


class Crawler(BaseCrawler):
    """Crawl with --max-tasks worker coroutines sharing one queue and one session."""

    stage = "stage3_asyncio"

    async def crawl(self) -> None:
        """Run the workers until every queued URL is done, then cancel them."""
        self.q: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        for item in self.start_items():
            self.q.put_nowait(item)
        # The same SSLContext as stages 1 and 2: the same CAs trusted, the same --insecure.
        # Unlike stages 1 and 2, a connection is kept alive after its answer, in aiohttp's
        # pool, for the next request to the same host: no new connect, no new TLS handshake.
        connector = aiohttp.TCPConnector(
            limit=self.max_tasks,
            ssl=self.ssl_context,
            resolver=FirstAddress(),
            socket_factory=small_reads,  # a read at a time the loop can afford: see there
        )
        self.robots_tasks: dict[str, asyncio.Task[None]] = {}  # robots.txt URL -> its fetch
        self.host_slots: dict[str, asyncio.Semaphore] = {}  # host -> its --max-per-host slots
        async with aiohttp.ClientSession(
            connector=connector,
            # No timeout of aiohttp's own (its default gives up connecting after 30 s):
            # --timeout bounds each try in fetch, from connect to last byte, as in stages 1, 2.
            timeout=aiohttp.ClientTimeout(),
            # Compressed bodies neither asked for nor inflated (auto_decompress): the bytes
            # sent are the body, as in stages 1 and 2, which have no decompressor.
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),  # no cookie kept, none sent: as stages 1 and 2
            # aiohttp's line limits above ours, so that checked_head's decide, as in 1 and 2.
            max_line_size=2 * MAX_FIELD,
            max_field_size=2 * MAX_FIELD,
            # A try is a request the server could have seen, as in stages 1 and 2: see there
            # (stale_is_free) for the one a pooled connection loses, which costs no try.
            middlewares=(stale_is_free,),
            # pool_trace for stale_is_free; a watcher (if any) hears of connections.
            trace_configs=[pool_trace(), *connection_traces(self.observer)],
        ) as self.session:
            workers = [
                asyncio.create_task(self.work(), name=f"worker-{i}") for i in range(self.max_tasks)
            ]
            try:
                await self.q.join()  # suspends: until task_done() matched every put
            finally:
                # The workers are all paused at q.get(): cancelling them ends the crawl.
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

    async def work(self) -> None:
        """Take URLs from the queue and fetch them, forever (until cancelled)."""
        while True:
            url, max_redirect = await self.q.get()  # suspends: until a URL is queued
            try:
                # suspends: while the URL's host has --max-per-host fetches in flight.  If the
                # page must fetch its origin's robots.txt, it does so in this slot too.
                async with self.host_slot(url):
                    await self.robots(url)  # suspends: until the origin's robots.txt is in
                    if self.begin(url):
                        await self.fetch(url, max_redirect)
            except Exception as exc:
                # A bug, or a page nobody foresaw: record it and keep crawling.  The
                # traceback it logs shows the whole coroutine chain, no stack ripping here.
                self.record_bug(url, exc)
            finally:
                self.q.task_done()

    def host_slot(self, url: str) -> asyncio.Semaphore:
        """The --max-per-host slots of url's host: ``async with`` waits for one and holds it."""
        # aiohttp's TCPConnector(limit_per_host=...) would count connections per host and
        # port; we count fetches per host name, robots.txt's too, as stages 1 and 2 do.
        host = host_key(url)
        if host not in self.host_slots:
            self.host_slots[host] = asyncio.Semaphore(self.max_per_host)
        return self.host_slots[host]

    async def robots(self, url: str) -> None:
        """Wait until the robots.txt of url's origin is known; the first page fetches it."""
        if (robots_url := self.robots_txt(url)) is not None:
            if robots_url not in self.robots_tasks:
                self.begin_robots(robots_url)
                # One Task per origin, in the place of this worker: the pages wait for it.
                self.robots_tasks[robots_url] = asyncio.create_task(
                    self.fetch(robots_url, 0), name="robots.txt"
                )
            await self.robots_tasks[robots_url]  # suspends: until robots.txt is in

    async def fetch(self, url: str, max_redirect: int) -> None:
        """Fetch one URL, trying again on network errors, and queue what it leads to."""
        for tries in range(1, self.max_tries + 1):
            try:
                await self.polite(url)  # suspends: until --delay lets the request go
                async with asyncio.timeout(self.options.timeout):  # time up: request() cancelled
                    response = await self.request(url)  # suspends: until the response is in
                break
            except NETWORK_ERRORS as exc:
                if self.failed_try(url, tries, exc):  # the last try: url is recorded as failed
                    return
        for item in self.record_response(url, max_redirect, response, tries):
            self.q.put_nowait(item)

    async def polite(self, url: str) -> None:
        """Wait until --delay lets a request to url's host start; at once without --delay."""
        if delay := self.delay_before(url):
            await asyncio.sleep(delay)  # suspends: until the host's turn comes

    async def request(self, url: str) -> Response:
        """GET a URL (redirects not followed) and read its body, up to the size cap."""
        # encoded=True: our URLs are already normalised and quoted; yarl must not redo it.
        async with self.session.get(URL(url, encoded=True), allow_redirects=False) as resp:
            # The head read as stages 1 and 2 read theirs: what they refuse raises WireError.
            headers = checked_head(resp.version, resp.status, resp.reason or "", resp.raw_headers)
            if (resp.content_length or 0) > MAX_BODY:
                return Response(resp.status, headers, too_large=True)
            chunks, size = [], 0
            async for chunk in resp.content.iter_chunked(64 * 1024):  # suspends: per chunk
                size += len(chunk)
                if size > MAX_BODY:
                    return Response(resp.status, headers, too_large=True)
                chunks.append(chunk)
            return Response(resp.status, headers, b"".join(chunks))


def crawl(roots: Sequence[str], options: Options | None = None) -> CrawlResult:
    """Crawl from ``roots`` and return the result; Ctrl-C returns the partial result."""
    crawler = Crawler(roots, options)
    try:
        # asyncio.Runner (what asyncio.run uses) takes Ctrl-C as stages 1 and 2 do by hand:
        # the first one cancels the main task, and run() raises KeyboardInterrupt after.
        with asyncio.Runner() as runner, interrupt.left_to_asyncio(runner):
            runner.run(crawler.crawl())
    except KeyboardInterrupt:
        return crawler.result(interrupted=True)
    return crawler.result()
