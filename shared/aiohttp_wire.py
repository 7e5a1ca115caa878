"""Stage 3's aiohttp session, set to read the wire and count tries as stages 1 and 2 do.

Stages 1 and 2 speak HTTP through shared/httpwire.py; stage 3 hands that to aiohttp.  What
it takes to make aiohttp's reading the same one (shared/REAL_WEB.md, "What a response
means") lives here, apart from the crawler, so that stage 3's crawler.py holds the lesson
and a diff against stage 2 shows only the change of style: one resolver, one socket
factory, some session settings, and what a try is.

One connection per request, as in stages 1 and 2: aiohttp's connector keeps no pool
(``force_close``).  A kept-alive connection would make a try depend on which connection
it got: a server may close it on a request it read (sent again, was that a try?), and
bytes a misbehaving response left on it would be read as the next page's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

import aiohttp
from aiohttp.abc import ResolveResult

from shared import USER_AGENT, observe
from shared.httpwire import MAX_FIELD
from shared.resolver import Answer, Destination, in_thread, lookup, settle, small_reads


class HungUp(aiohttp.ClientConnectionError):
    """The server hung up on a request it may have read: before its answer, or half way."""


async def every_send_a_try(
    request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
) -> aiohttp.ClientResponse:
    """Send a request (a middleware of the session); a server that hung up costs a try.

    Each request goes out on a new connection, so a close before the whole answer means
    the server may have read the request: a try, which --max-tries counts and --delay
    spaces, as in stages 1 and 2.  aiohttp would quietly send such a request a second
    time itself (RFC 9112, section 9.3.1, allows it for a kept-alive connection); HungUp,
    an error it does not retry, carries the failure past it to fetch.
    """
    try:
        return await handler(request)  # suspends: connect, send, read the head
    except aiohttp.ClientConnectorError:
        raise  # no connection at all: nothing was sent, and aiohttp sends nothing again
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
        raise HungUp(f"{type(exc).__name__}: {exc}") from exc


class FirstAddress(aiohttp.ThreadedResolver):
    """Resolve as stages 1 and 2 do: once per host per crawl, failures too, in a thread."""

    # aiohttp's own would hand the connector every address, to try in turn (see REAL_WEB.md),
    # and would look a name up again after a failure, or after ten seconds.
    def __init__(self) -> None:
        """Start with no host looked up; one resolver serves one crawl's session."""
        super().__init__()
        self.looked_up: dict[tuple[str, int], asyncio.Future[Destination]] = {}

    async def resolve(self, host: str, port: int = 0, family: int = 0) -> list[ResolveResult]:
        """Only the first address of host; suspends: while DNS answers, in a thread."""
        if (host, port) not in self.looked_up:
            loop = asyncio.get_running_loop()
            found = self.looked_up[host, port] = loop.create_future()
            # shared/resolver.py's daemon thread, not asyncio's pool (run_in_executor): a
            # lookup that never ends holds neither a worker of the pool nor asyncio.run's
            # end, which waits for the pool's threads.  call_soon_threadsafe wakes the loop
            # through asyncio's own self-pipe, as the resolver's does stages 1 and 2's.
            then = settle(found)

            def hand_over(answer: Answer) -> None:  # runs in the lookup's thread
                with contextlib.suppress(RuntimeError):  # the loop is closed: the crawl is over
                    loop.call_soon_threadsafe(then, answer)

            in_thread(lambda: lookup(host, port), hand_over)
        # Shielded: a try that times out stops waiting, and the lookup goes on for the next.
        fam, (ip, *_) = await asyncio.shield(self.looked_up[host, port])
        return [ResolveResult(hostname=host, host=ip, port=port, family=fam, proto=0, flags=0)]


def open_session(ssl_context: ssl.SSLContext, limit: int) -> aiohttp.ClientSession:
    """A session for one crawl: at most ``limit`` connections, each for one request.

    Use it as ``async with open_session(...) as session:``, as aiohttp.ClientSession.
    Whoever watches the crawl (shared/observe.py) hands the session the trace configs it
    wants to hear: aiohttp's tracing is stage 3's one point to watch, as a step of the
    loop is stages 1 and 2's.
    """
    watcher = observe.observer
    traces = watcher.session_traces() if watcher else []
    # The same SSLContext as stages 1 and 2: the same CAs trusted, the same --insecure.
    connector = aiohttp.TCPConnector(
        limit=limit,
        ssl=ssl_context,
        resolver=FirstAddress(),
        socket_factory=small_reads,  # a read at a time the loop can afford: see there
        # No pool: each connection is closed after its one response, as in stages 1 and 2
        # (aiohttp then says "Connection: close", as their requests do).  See the top.
        force_close=True,
    )
    return aiohttp.ClientSession(
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
        # A try is a request the server may have read, as in stages 1 and 2.
        middlewares=(every_send_a_try,),
        trace_configs=traces,
    )
