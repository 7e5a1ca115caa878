"""Stage 3 internals, tested on asyncio's own loop with pytest-asyncio."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

import stage3_asyncio.crawler as stage3
from shared.crawling import Options
from shared.log import Record
from stage3_asyncio import Crawler


def html(*links: str) -> web.Response:
    return web.Response(
        text="".join(f'<a href="{link}">x</a>' for link in links), content_type="text/html"
    )


@pytest_asyncio.fixture
async def base_url() -> AsyncIterator[str]:
    """A tiny site served on this test's own event loop, on 127.0.0.1."""
    pages = {"/": html("/a", "/b", "/big"), "/a": html("/"), "/b": html("/c"), "/c": html()}

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/big":
            return web.Response(body=b"x" * 5000, content_type="text/html")
        return pages.get(request.path) or web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/"
    await runner.cleanup()


@pytest.mark.asyncio
async def test_crawl_finishes_with_no_task_left_running(base_url: str) -> None:
    crawler = Crawler([base_url], Options(max_tasks=3))
    await crawler.crawl()
    pages = ("robots.txt", "", "a", "b", "c", "big")  # robots.txt: a 404, so all is allowed
    assert {s.url for s in crawler.done} == {base_url + p for p in pages}
    workers = [t for t in asyncio.all_tasks() if t.get_name().startswith("worker-")]
    assert workers == []  # every worker was cancelled and awaited
    assert crawler.session.closed


@pytest.mark.asyncio
async def test_request_stops_reading_past_the_size_cap(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stage3, "MAX_BODY", 1000)
    crawler = Crawler([base_url])
    await crawler.crawl()
    big = crawler.by_url_for_test = {s.url: s for s in crawler.done}[base_url + "big"]
    assert (big.status == 200 and big.error == "body larger than 10485760 bytes") or big.error


@pytest.mark.asyncio
async def test_a_bug_is_recorded_with_the_whole_coroutine_chain_and_the_crawl_goes_on(
    base_url: str, monkeypatch: pytest.MonkeyPatch, logged: list[Record]
) -> None:
    crawler = Crawler([base_url])
    original = crawler.parse_links

    def parse_links(url: str, text: str) -> set[str]:
        if url.endswith("/b"):
            raise ValueError("parse error")
        return original(url, text)

    monkeypatch.setattr(crawler, "parse_links", parse_links)
    await crawler.crawl()
    stats = {s.url: s for s in crawler.done}
    assert stats[base_url + "b"].error == "ValueError: parse error"
    assert base_url + "a" in stats and base_url + "c" not in stats  # /c was only linked from /b
    (record,) = [r for r in logged if r.exc]
    assert record.exc is not None
    frames = [frame.name for frame in traceback.extract_tb(record.exc.__traceback__)]
    # No stack ripping: the traceback runs from the worker down to the failing parser.
    assert frames[:2] == ["work", "fetch"] and frames[-1] == "parse_links"
