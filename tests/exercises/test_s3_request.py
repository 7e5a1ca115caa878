"""Exercise s3-request: one GET with aiohttp, redirects not followed, the body capped.

Task 1 is stage 3's `Crawler.request` as far as complete responses go, task 2 its size
cap (see shared/tools/exercises/s3-request/README.md). The tests serve their own pages on
127.0.0.1 from the test's event loop, and crawl the test site for its oracle.

The contract (the README's "What your code must do"), a test for each promise:
- a page, a redirect (not followed) and an error status come back as responses, header
  names in lower case, the URL sent as given;
- a network error raises, whether at the connect or in the middle of the body;
- every response is released by request() itself, on every way out (`get` checks it
  after each request: the test keeps each response alive, so no garbage collector
  releases it in the code's place);
- a head stages 1 and 2 refuse raises WireError before a byte of its body is read;
- the body costs at most the cap: a declared length over it is not read at all, whatever
  the status, a body of exactly the cap is kept, an endless one is cut off once it passes
  the cap, and past the cap no more than one chunk of 64 KiB is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict
from reasons import reason

import stage3_asyncio.crawler as stage3
from shared import USER_AGENT
from shared.crawling import Options
from shared.httpwire import WireError
from shared.responses import Response
from shared.testsite import Site
from shared.testsite.oracle import assert_matches_oracle
from stage3_asyncio.crawler import Crawler

T = TypeVar("T")
LIMIT_S = 5.0  # far above what any request here needs
CRAWL_LIMIT_S = 30.0  # a whole crawl of the default site takes a second or two
CAP = 1000  # the size cap in the tests of task 2, instead of 10 MiB
PAGE = b"<html><body>" + b"<p>words</p>" * 20_000 + b"</body></html>"  # 240 kB: many chunks
# A head longer than MAX_HEAD, in fields short enough for aiohttp: stages 1 and 2 refuse it.
LONG_HEAD = CIMultiDict((f"X-Filler-{n}", "f" * 4000) for n in range(20))


class Pages:
    """A tiny web server's pages, and the raw request lines it received."""

    def __init__(self) -> None:
        self.requested: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer by path; see each branch."""
        self.requested.append(request.raw_path)
        path = request.path
        if path == "/page":
            headers = {"X-Crawler-Test": "Kept"}
            return web.Response(body=PAGE, content_type="text/html", headers=headers)
        if path == "/moved":
            return web.Response(status=301, headers={"Location": "/page"})
        if path == "/missing":
            return web.Response(status=404, text="no such page")
        if path.startswith("/exact/"):  # /exact/N: N bytes with a Content-Length
            return web.Response(body=b"x" * int(path.split("/")[2]), content_type="text/plain")
        if path == "/endless":  # chunked, no Content-Length, never ends on its own
            return await self.endless(request)
        if path.startswith("/declared/"):  # /declared/N/S: N bytes declared with status S,
            _, _, size, status = path.split("/")  # 10 sent, then none
            return await self.stalled(request, int(size), status=int(status))
        if path == "/long-head":  # a head over 64 KiB, a short body: 10 bytes, then none
            return await self.stalled(request, 100, fields=LONG_HEAD)
        if path == "/cut":  # 1000 bytes declared, 10 sent, then the connection is closed
            return await self.stalled(request, 1000, cut=True)
        if path.startswith("/chunked/"):  # /chunked/N: N bytes, chunked, no Content-Length
            return await self.chunked(request, int(path.split("/")[2]))
        if path == "/repeated":  # one field twice: a head read as stages 1 and 2 read it
            return web.Response(
                text="twice", headers=CIMultiDict([("X-Twice", "one"), ("X-Twice", "two")])
            )
        return web.Response(body=request.raw_path.encode(), content_type="text/plain")

    async def endless(self, request: web.Request) -> web.StreamResponse:
        """Send 500-byte chunks until the client goes away."""
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            while True:
                await response.write(b"y" * 500)
                await asyncio.sleep(0.001)
        except (ConnectionError, RuntimeError):  # the client closed the connection
            return response

    async def chunked(self, request: web.Request, size: int) -> web.StreamResponse:
        """Send ``size`` bytes in 300-byte chunks with no Content-Length, then end."""
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, size, 300):
            await response.write(b"c" * min(300, size - start))
        await response.write_eof()
        return response

    async def stalled(
        self,
        request: web.Request,
        declared: int,
        cut: bool = False,
        status: int = 200,
        fields: CIMultiDict[str] | None = None,
    ) -> web.StreamResponse:
        """Declare ``declared`` bytes, send 10, then wait for the client to go (or ``cut``)."""
        headers = CIMultiDict(fields or {})
        headers["Content-Type"] = "text/plain"
        if 300 <= status < 400:
            headers["Location"] = "/page"
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = declared
        await response.prepare(request)
        await response.write(b"z" * 10)
        transport = request.transport
        if cut and transport is not None:
            transport.close()
        while transport is not None and not transport.is_closing():
            await asyncio.sleep(0.01)
        return response


async def served(pages: Pages, body: Callable[[str], Awaitable[T]]) -> T:
    """Serve `pages` on 127.0.0.1 while body(base_url) runs."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", pages.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        return await body(f"http://127.0.0.1:{port}/")
    finally:
        await runner.cleanup()


def kept(
    made: list[aiohttp.ClientResponse], buffered: bool = False
) -> type[aiohttp.ClientResponse]:
    """A response class whose every response the test holds: only the code releases it.

    ``buffered``: the response is handed to the code only once the whole body is in
    aiohttp's buffer, so that each read takes as much as it asks for.
    """

    class Kept(aiohttp.ClientResponse):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        async def start(self, connection: Any) -> aiohttp.ClientResponse:
            await super().start(connection)
            if buffered:
                await self.content.wait_eof()  # suspends: until the last byte is in
            return self

    return Kept


def assert_released(made: list[aiohttp.ClientResponse], path: str) -> None:
    """Every response request() was given is closed: its connection back to the pool."""
    left = [response.status for response in made if not response.closed]
    assert not left, reason("s3-request.not-released", path=path, count=len(left))


def get(
    *paths: str, stalled: str = "s3-request.endless-body", **stalled_fields: object
) -> tuple[list[Response], Pages]:
    """Call Crawler.request for each path of a fresh tiny server, in a session as crawl's.

    Each response must be released once request() returns.  If a request is still
    reading after LIMIT_S, the test fails with the sentence ``stalled`` (its blanks
    ``stalled_fields``, and the seconds).
    """
    pages = Pages()

    async def requests(base_url: str) -> list[Response]:
        crawler = Crawler([base_url])
        made: list[aiohttp.ClientResponse] = []
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=LIMIT_S),
            headers={"User-Agent": USER_AGENT},
            response_class=kept(made),
        ) as crawler.session:
            responses = []
            for path in paths:
                try:
                    responses.append(
                        await asyncio.wait_for(crawler.request(base_url + path), LIMIT_S)
                    )
                except aiohttp.ClientResponseError as exc:  # raise_for_status, say
                    pytest.fail(reason("s3-request.status-raised", status=exc.status, path=path))
                assert_released(made, path)
            return responses

    try:
        return asyncio.run(served(pages, requests)), pages
    except TimeoutError:
        pytest.fail(reason(stalled, seconds=f"{LIMIT_S:g}", **stalled_fields))


# --- Task 1: a GET and its whole response ---------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_a_page_comes_back_whole_with_lower_case_header_names() -> None:
    """Status, every byte of the body, and the headers under lower-case names."""
    (response,), _ = get("page")
    assert response.status == 200, reason(
        "s3-request.the-status-is-not-200", value1=response.status
    )
    assert response.body == PAGE, reason("s3-request.the-body-is-not-the")
    assert not response.too_large, reason("s3-request.a-small-page-was-marked")
    assert all(name == name.lower() for name in response.headers), reason(
        "s3-request.header-names-store-each-in", value1=sorted(response.headers)
    )
    assert response.headers.get("content-type", "").startswith("text/html"), reason(
        "s3-request.the-headers-have-no-content", value1=response.headers
    )
    assert response.headers.get("x-crawler-test") == "Kept", reason(
        "s3-request.a-header-s-value-was"
    )


@pytest.mark.task(taskno=1)
def test_the_head_is_read_as_stages_1_and_2_read_it() -> None:
    """checked_head makes the headers: a field sent twice is one header, its values joined."""
    (response,), _ = get("repeated")
    assert response.headers.get("x-twice") == "one, two", reason(
        "s3-request.head-not-checked", value=repr(response.headers.get("x-twice"))
    )


@pytest.mark.task(taskno=1)
def test_a_head_stages_1_and_2_refuse_raises_before_the_body_is_read() -> None:
    """A head over 64 KiB, which aiohttp lets through, raises WireError as soon as the head
    is in: its body (10 bytes sent of 100 declared, then nothing) is not waited for, and the
    response is released on that way out too."""
    pages = Pages()

    async def refused(base_url: str) -> None:
        crawler = Crawler([base_url])
        made: list[aiohttp.ClientResponse] = []
        async with aiohttp.ClientSession(response_class=kept(made)) as crawler.session:
            try:
                await asyncio.wait_for(crawler.request(base_url + "long-head"), LIMIT_S)
            except WireError:
                assert_released(made, "long-head")
                return
            except TimeoutError:
                pytest.fail(reason("s3-request.head-checked-after-body", seconds=f"{LIMIT_S:g}"))
        pytest.fail(reason("s3-request.long-head-accepted"))

    asyncio.run(served(pages, refused))


@pytest.mark.task(taskno=1)
def test_a_redirect_is_returned_not_followed() -> None:
    """The crawler follows redirects itself: request() hands back the 301 and its Location."""
    (response,), pages = get("moved")
    assert response.status == 301, reason("s3-request.followed", status=response.status)
    assert response.headers.get("location") == "/page", reason(
        "s3-request.the-redirect-s-location-was"
    )
    assert pages.requested == ["/moved"], reason("s3-request.the-redirect-was-followed")


@pytest.mark.task(taskno=1)
def test_an_error_status_is_a_response_not_an_exception() -> None:
    """A 404 is data for the report: request() returns it."""
    (response,), _ = get("missing")
    assert response.status == 404, reason(
        "s3-request.the-status-is-not-404", value1=response.status
    )
    assert response.body == b"no such page", reason("s3-request.an-error-page-s-body")


@pytest.mark.task(taskno=1)
def test_the_url_goes_out_exactly_as_given() -> None:
    """Our URLs are normalised and quoted already: %2F and %7E must not be re-spelled."""
    (response,), pages = get("a%7Eb?q=a%2Fb")
    assert pages.requested == ["/a%7Eb?q=a%2Fb"], reason(
        "s3-request.the-server-was-asked-for", value1=pages.requested
    )
    assert response.body == b"/a%7Eb?q=a%2Fb", reason("s3-request.the-body-is-not-the-2")


@pytest.mark.task(taskno=1)
def test_a_refused_connection_raises_for_fetch_to_retry() -> None:
    """A network error is not a response: it comes out of request() as aiohttp's error."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nobody listens here once probe is closed

    async def main() -> None:
        crawler = Crawler([f"http://127.0.0.1:{port}/"])
        async with aiohttp.ClientSession() as crawler.session:
            await asyncio.wait_for(crawler.request(f"http://127.0.0.1:{port}/"), LIMIT_S)

    try:
        asyncio.run(main())
    except aiohttp.ClientError:
        return
    pytest.fail(reason("s3-request.a-refused-connection-must-raise"))


@pytest.mark.task(taskno=1)
def test_a_body_cut_short_raises_and_its_response_is_released() -> None:
    """The connection lost mid-body is a network error, not a short page: it raises, for
    fetch to try again, and the response is released on that way out too."""
    pages = Pages()

    async def cut(base_url: str) -> None:
        crawler = Crawler([base_url])
        made: list[aiohttp.ClientResponse] = []
        async with aiohttp.ClientSession(response_class=kept(made)) as crawler.session:
            try:
                response = await asyncio.wait_for(crawler.request(base_url + "cut"), LIMIT_S)
            except aiohttp.ClientError:
                assert_released(made, "cut")
                return
        pytest.fail(reason("s3-request.a-cut-body-must-raise", size=len(response.body)))

    asyncio.run(served(pages, cut))


@pytest.mark.task(taskno=1)
def test_a_request_cancelled_in_the_middle_of_the_body_releases_its_response() -> None:
    """fetch's timeout cancels request() while it waits for the rest of a body: a cancel is
    a way out as an exception is, and the response is released on it too."""
    path = "declared/100/200"  # 10 bytes of 100 sent, then nothing

    async def cancelled(base_url: str) -> None:
        crawler = Crawler([base_url])
        made: list[aiohttp.ClientResponse] = []
        async with aiohttp.ClientSession(response_class=kept(made)) as crawler.session:
            reading = asyncio.create_task(crawler.request(base_url + path))
            try:
                async with asyncio.timeout(LIMIT_S):
                    while not (made and made[0].content is not None and made[0].content._cursor):
                        await asyncio.sleep(0.005)  # until the 10 bytes sent are read
            except TimeoutError:
                pytest.fail(reason("s3-request.body-not-read", seconds=f"{LIMIT_S:g}"))
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            assert_released(made, path)

    asyncio.run(served(Pages(), cancelled))


@pytest.mark.task(taskno=1)
def test_the_default_site_gives_the_oracles_pages_and_records(
    default_site: tuple[Site, str],
) -> None:
    """The whole crawl: redirects, charsets, a 1 MB page, a flaky page, as the oracle says."""
    site, base_url = default_site
    crawler = Crawler([base_url], Options())
    asyncio.run(asyncio.wait_for(crawler.crawl(), CRAWL_LIMIT_S))
    assert_matches_oracle(crawler.result(), site.expected(base_url))


# --- Task 2: the size cap -----------------------------------------------------------------------


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make stage 3's size cap CAP bytes for one test."""
    monkeypatch.setattr(stage3, "MAX_BODY", CAP)


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize("status", [200, 404, 301])
def test_a_body_declared_longer_than_the_cap_is_not_kept(status: int) -> None:
    """Content-Length above the cap: too_large, an empty body, the status still there, and
    not a byte more read: the server sends 10 bytes of the body and waits.  Whatever the
    status: an error page or a redirect costs as much to download as a page."""
    (response,), _ = get(
        f"declared/{CAP + 1}/{status}", stalled="s3-request.declared-body-read", status=status
    )
    assert response.status == status, reason(
        "s3-request.status-not-kept", value=response.status, status=status
    )
    assert response.too_large, reason("s3-request.a-body-declared-longer-than")
    assert response.body == b"", reason("s3-request.a-body-too-large-must")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("small_cap")
def test_a_body_of_exactly_the_cap_is_kept() -> None:
    """The cap is the largest body allowed, not the first one refused."""
    (response,), _ = get(f"exact/{CAP}")
    assert not response.too_large, reason("s3-request.a-body-of-exactly-the")
    assert response.body == b"x" * CAP, reason("s3-request.a-body-of-exactly-the-2")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("small_cap")
def test_an_endless_body_is_read_only_up_to_the_cap() -> None:
    """No Content-Length and no end: reading stops once the body passes the cap."""
    (response,), _ = get("endless")
    assert response.status == 200, reason(
        "s3-request.the-status-is-not-200", value1=response.status
    )
    assert response.too_large, reason("s3-request.a-body-that-passes-the")
    assert response.body == b"", reason("s3-request.a-body-too-large-must")


@pytest.mark.task(taskno=2)
@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize("size", [CAP, CAP + 1])
def test_a_body_of_no_declared_length_is_counted_chunk_by_chunk(size: int) -> None:
    """No Content-Length: the body is read, and the cap applies to the sum of its chunks,
    the last chunk included: up to the cap it is kept whole, one byte more is too large."""
    (response,), _ = get(f"chunked/{size}")
    if size <= CAP:
        assert not response.too_large and response.body == b"c" * size, reason(
            "s3-request.unknown-length-kept", size=size, cap=CAP
        )
    else:
        assert response.too_large and response.body == b"", reason(
            "s3-request.last-chunk-counted", size=size, cap=CAP, kept=len(response.body)
        )


BIG_CAP = 100_000  # a cap larger than a chunk of 64 KiB, and not a multiple of it


@pytest.mark.task(taskno=2)
def test_a_body_too_large_costs_the_cap_and_one_small_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All of a body four times the cap is in aiohttp's buffer before request() reads, so
    each read takes all it asks for: past the cap, no more than one chunk of 64 KiB (what
    stages 1 and 2 read at a time) may be taken."""
    monkeypatch.setattr(stage3, "MAX_BODY", BIG_CAP)

    async def too_large(base_url: str) -> tuple[Response, int]:
        crawler = Crawler([base_url])
        made: list[aiohttp.ClientResponse] = []
        async with aiohttp.ClientSession(
            response_class=kept(made, buffered=True), read_bufsize=2**20
        ) as crawler.session:
            path = f"chunked/{4 * BIG_CAP}"
            response = await asyncio.wait_for(crawler.request(base_url + path), LIMIT_S)
            assert_released(made, path)
            return response, made[0].content._cursor  # the bytes the code took from the body

    response, taken = asyncio.run(served(Pages(), too_large))
    assert response.too_large and response.body == b"", reason("s3-request.a-body-that-passes-the")
    assert taken <= BIG_CAP + 64 * 1024, reason(
        "s3-request.read-far-past-the-cap", taken=taken, cap=BIG_CAP
    )
