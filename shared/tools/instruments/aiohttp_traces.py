"""The instruments' adapter for stage 3: aiohttp's tracing, told as observer events.

Stage 3 runs on asyncio's loop and connects inside aiohttp, out of sight of any loop of
ours.  aiohttp tells the trace configs of a session what happens to each request; an
observer that wants those events hands these to the session (``Observer.session_traces``
in shared/observe.py), and the crawler's code stays the same whoever watches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import aiohttp

if TYPE_CHECKING:
    from shared.tools.instruments.connections import Connections


def connection_traces(listener: Connections) -> list[aiohttp.TraceConfig]:
    """aiohttp trace configs that call ``listener.connected(url)`` when a request has its
    connection: a new one (its TLS handshake done) or one taken from the pool."""

    async def request_start(_: object, ctx: Any, params: Any) -> None:
        ctx.url = str(params.url)  # ctx is this request's own, for the events below

    async def connection_ready(_: object, ctx: Any, __: object) -> None:
        listener.connected(ctx.url)

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(request_start)
    trace.on_connection_create_end.append(connection_ready)
    trace.on_connection_reuseconn.append(connection_ready)
    return [trace]
