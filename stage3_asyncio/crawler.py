"""Stage 3 of 3: asyncio coroutines, an asyncio.Queue and aiohttp.

Chapter: "Coordinating Coroutines".  Changed from stage 2: ``yield from`` -> ``await``,
our Queue -> asyncio.Queue, our sockets, TLS handshake and shared/httpwire.py -> an
aiohttp session.  What a response means is decided in shared/crawling.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import aiohttp
from yarl import URL

from shared import interrupt
from shared.aiohttp_wire import open_session
from shared.crawling import BaseCrawler, CrawlResult, Options, Response, host_key
from shared.httpwire import WireError, checked_head
from shared.responses import MAX_BODY

# What a try can fail with: aiohttp's errors (refused, reset, a certificate that does not
# verify, a body shorter than its Content-Length, a garbage status line), a head that
# stages 1 and 2 refuse (WireError, from checked_head) and the timeout.
NETWORK_ERRORS = (aiohttp.ClientError, WireError, TimeoutError)


class Crawler(BaseCrawler):
    """Crawl with --max-tasks worker coroutines sharing one queue and one session."""

    stage = "stage3_asyncio"

    async def crawl(self) -> None:
        """Run the workers until every queued URL is done, then cancel them."""
        self.q: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        for item in self.start_items():
            self.q.put_nowait(item)
        self.robots_tasks: dict[str, asyncio.Task[None]] = {}  # robots.txt URL -> its fetch
        self.host_slots: dict[str, asyncio.Semaphore] = {}  # host -> its --max-per-host slots
        # One session for the crawl, one connection per request as in stages 1 and 2.  How it
        # is set to read the wire as they do, and to count a try as they do, is
        # shared/aiohttp_wire.py's business.
        async with open_session(self.ssl_context, self.max_tasks) as self.session:
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
