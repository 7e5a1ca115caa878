"""The server: the site answered by aiohttp.web, from a thread of its own.

:func:`serve` runs an aiohttp application in a daemon thread with its own event loop,
because stages 1 and 2 block their thread in their own select() loop: the site cannot
share it.  :func:`serve_hosts` serves the same site on several loopback addresses at
once, each a host of its own.

:func:`answer` turns a page's definition (pages.py's Resource) into bytes on the wire,
or into the misbehaviour its ``kind`` names: this is where a new way to misbehave goes.
Every request is counted on the Site (``site.requests``, ``site.max_in_flight``,
``site.max_in_flight_by_host``...), for tests to read afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote_to_bytes, urlsplit

from aiohttp import web

from shared.testsite import endless
from shared.testsite.hostile_wire import COOKIE, COOKIE_GATE, WIRE, WIRE_ERROR, WIRE_HUGE
from shared.testsite.pages import HTML, Resource
from shared.testsite.tls import ServerTLS
from shared.testsite.traps import HUGE_SIZE

if TYPE_CHECKING:
    from shared.testsite.site import Site

_LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
_HUGE_CHUNK = 256 * 1024
_SILENT_SECONDS = 3600.0  # far longer than any crawler's timeout; cancelled at shutdown

# Characters left unquoted in a canonical path or query, the same sets as shared.urls uses,
# so the site's keys are spelled the way a crawler's normalised URL is.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"


def canonical(path_qs: str) -> str:
    """Spell a request target the way a normalised URL spells it (upper-case escapes).

    Escapes are undone to bytes, not text, so one that is not UTF-8 (``%E9``) stays itself.
    """
    path, sep, query = path_qs.partition("?")
    path = quote(unquote_to_bytes(path), safe=_SAFE_PATH)
    if sep and query:
        return path + "?" + quote(unquote_to_bytes(query), safe=_SAFE_QUERY)
    return path


def fill(template: bytes, origin: str) -> bytes:
    """Put the served address into a body or header template."""
    scheme, netloc = origin.split("://", 1)
    port = netloc.rpartition(":")[2]
    return (
        template.replace(b"{origin}", origin.encode())
        .replace(b"{netloc}", netloc.encode())
        .replace(b"{port}", port.encode())
        .replace(b"{SCHEME}", scheme.upper().encode())
    )


def make_app(site: Site) -> web.Application:
    """An aiohttp application serving ``site`` from one catch-all route."""
    app = web.Application()
    # Handlers that may still be running at shutdown (silent pages, slow pages, a
    # client that stopped reading the huge page) are cancelled so cleanup is prompt.
    handlers: set[asyncio.Task[object]] = set()

    async def handle_tracked(request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            handlers.add(task)
        try:
            return await handle(site, request)
        finally:
            handlers.discard(task)

    async def cancel_handlers(_app: web.Application) -> None:
        for task in list(handlers):
            task.cancel()

    app.router.add_get("/{tail:.*}", handle_tracked)
    app.on_shutdown.append(cancel_handlers)
    return app


async def handle(site: Site, request: web.Request) -> web.StreamResponse:
    """Count the request, wait the configured latency, then answer as defined."""
    if endless.closed_silently(request):  # as if the connection had been closed after its answer
        return send_raw(request, b"")
    path, host = canonical(request.raw_path), host_of(request)
    res = site.resource(path)
    if endless.kept_alive(request) and site.drops_left(served_origin(request) + path, res):
        # The flaky page hangs up only on a new connection.  On a kept-alive one it does
        # what a server that closed it while idle does: the request is met with a close,
        # never seen.  A crawler that pools tells the two apart by the connection, too.
        return send_raw(request, b"")
    site.arrived(host, path, request.headers.get("User-Agent", ""))
    try:
        if endless.hangs_up(request):  # a hangup-kept page's connection: seen, then closed
            return send_raw(request, b"")
        if site.latency > 0:
            await asyncio.sleep(site.latency)
        if site.silent_close or res.kind == "keepalive-silent":
            endless.spend(request)  # this answer is the connection's last, though it says not
        return await answer(site, request, path, res)
    finally:
        site.answered(host)


async def answer(site: Site, request: web.Request, path: str, res: Resource) -> web.StreamResponse:
    """Produce the response (or the misbehaviour) a resource defines."""
    origin = served_origin(request)
    if res.drops and site.drop_now(origin + path, res):
        return send_raw(request, b"")
    kind = res.kind
    if kind in endless.ENDLESS_FAILING:
        return send_raw(request, b"", reset=await endless.misbehave(site, request, path, kind))
    if kind == "silent":
        await asyncio.sleep(_SILENT_SECONDS)
        return web.Response(status=504)
    if kind == "reset":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
        return send_raw(request, head + b"<p>" + b"x" * 2000, reset=True)
    if kind == "short":
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n"
        return send_raw(request, head + b"y" * 100)
    if kind == "garbage":
        return send_raw(request, b"GARBAGE\r\n\r\n")
    if kind == "huge":
        return await send_huge(request)
    if kind in (WIRE, WIRE_ERROR, WIRE_HUGE):  # a response byte for byte, from hostile_wire.py
        return send_raw(request, res.body)
    if kind == COOKIE_GATE:  # 403, unless the request sends the cookie back
        sent = COOKIE.decode() in request.headers.getall("Cookie", [])
        status = 200 if sent else res.status
        return web.Response(status=status, body=res.body, headers={"Content-Type": HTML})
    if kind == "raw":
        # No Content-Type header at all, which web.Response would always add.
        length = f"Content-Length: {len(res.body)}\r\n".encode()
        head = b"HTTP/1.1 200 OK\r\n" + length + b"Connection: close\r\n\r\n"
        return send_raw(request, head + res.body)
    if kind == "hangup-kept":  # the next request on this connection is hung up on
        endless.hang_up_next(request)
    if kind == "wide" and site.wide_delay > 0:
        await asyncio.sleep(site.wide_delay)
    body = site.render_page(res.page, origin) if kind == "page" else fill(res.body, origin)
    headers = {"Content-Type": res.content_type} if res.content_type else {}
    if res.location is not None:
        headers["Location"] = fill(res.location.encode(), origin).decode()
    return web.Response(status=res.status, body=body, headers=headers)


def served_origin(request: web.Request) -> str:
    """The origin of the socket the request came in on, for absolute links."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if sockname:
        return f"{request.scheme}://{sockname[0]}:{sockname[1]}"
    return f"{request.scheme}://{request.host}"


def host_of(request: web.Request) -> str:
    """The host a request was sent to, without its port: as its Host header names it.

    A crawler's per-host limits count hosts by name, ports apart, and so does the
    server.  A request without a Host header counts under the address it came in on.
    """
    named = urlsplit("//" + request.headers.get("Host", "")).hostname
    if named:
        return named
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    return str(sockname[0]) if sockname else ""


def send_raw(request: web.Request, data: bytes, *, reset: bool = False) -> web.StreamResponse:
    """Write raw bytes (possibly none) and close the connection without a real response.

    The returned response is never sent: preparing it on the closed transport raises
    ConnectionResetError inside aiohttp, which it treats as a client that went away and
    logs only at debug level.  Its status (444, as nginx uses for "closed without a
    response") shows up in the access log.
    """
    transport = request.transport
    if transport is not None and not transport.is_closing():
        if data:
            transport.write(data)
        if reset:
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()
    return web.Response(status=444)


async def send_huge(request: web.Request) -> web.StreamResponse:
    """Stream a 20 MB body in chunks; stop quietly when the client hangs up."""
    response = web.StreamResponse(status=200, headers={"Content-Type": HTML})
    response.content_length = HUGE_SIZE
    chunk = (b"<p>" + b"huge " * (_HUGE_CHUNK // 5))[:_HUGE_CHUNK]
    try:
        await response.prepare(request)
        for _ in range(HUGE_SIZE // _HUGE_CHUNK):
            await response.write(chunk)
    except ConnectionError:
        pass  # the crawler stopped reading at its cap, as it should
    return response


# --------------------------------------------------------------------------- serving


@dataclass
class _ServerState:
    """What the server thread hands back to the thread that started it."""

    ready: threading.Event = field(default_factory=threading.Event)
    urls: list[str] = field(default_factory=list)
    error: BaseException | None = None
    loop: asyncio.AbstractEventLoop | None = None
    stop: asyncio.Event | None = None


def loopback_hosts(count: int) -> tuple[str, ...]:
    """Return ``count`` loopback addresses, 127.0.0.1 to 127.0.0.<count>, for :func:`serve_hosts`.

    Linux answers on the whole of 127.0.0.0/8 with no set-up; macOS has only 127.0.0.1
    until you add the others (``sudo ifconfig lo0 alias 127.0.0.2 up``, and so on).
    """
    if not 1 <= count <= 254:
        raise ValueError(f"between 1 and 254 hosts (got {count})")
    return tuple(f"127.0.0.{n}" for n in range(1, count + 1))


async def _run_server(
    site: Site, hosts: Sequence[str], port: int, state: _ServerState, tls: ServerTLS | None
) -> None:
    """Serve until told to stop, then clean up; runs in the server thread's loop."""
    state.loop = asyncio.get_running_loop()
    state.stop = asyncio.Event()
    # A short shutdown timeout bounds cleanup even if a handler ignores cancellation.
    runner = web.AppRunner(make_app(site), shutdown_timeout=0.5)
    scheme = "https" if tls else "http"
    try:
        await runner.setup()
        context = tls.context if tls else None
        # One application, one listening socket per host: the handlers are shared, and
        # each request's Host header (or address) tells which host it was sent to.
        for host in hosts:
            try:
                await web.TCPSite(runner, host, port, ssl_context=context).start()
            except OSError as exc:
                raise OSError(exc.errno, f"cannot serve on {host}: {exc.strerror}") from exc
        state.urls = [f"{scheme}://{host}:{bound}/" for host, bound, *_ in runner.addresses]
    except BaseException as exc:
        state.error = exc
        state.ready.set()
        await runner.cleanup()
        return
    state.ready.set()
    try:
        await state.stop.wait()
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def serve_hosts(
    site: Site, hosts: Sequence[str], port: int = 0, *, tls: ServerTLS | None = None
) -> Iterator[list[str]]:
    """Serve one site on several loopback addresses at once, each a host of its own.

    Yields one base URL per host, in the order of ``hosts``: "http://127.0.0.2:PORT/"
    and so on.  Each host serves the whole site, its absolute links pointing to itself,
    so a crawl from all the base URLs at once crawls several independent hosts side by
    side, and ``site.expected(urls)`` gives its records.  With ``port`` 0 each host gets
    a free port of its own; the hosts differ by address anyway, and per-host limits
    ignore ports.  Only addresses in 127.0.0.0/8 are accepted: the test site is never
    served beyond this machine.  See :func:`serve` for the thread and the clean-up.
    """
    for host in hosts:
        if ipaddress.ip_address(host) not in _LOOPBACK:
            raise ValueError(f"the test site serves loopback addresses only, not {host}")
    _ignore_python_3_13_0_server_bug()
    state = _ServerState()
    thread = threading.Thread(
        target=lambda: asyncio.run(_run_server(site, hosts, port, state, tls)),
        name="testsite",
        daemon=True,
    )
    thread.start()
    state.ready.wait()
    if state.error is not None:
        thread.join()
        raise state.error
    try:
        yield state.urls
    finally:
        assert state.loop is not None and state.stop is not None
        state.loop.call_soon_threadsafe(state.stop.set)
        thread.join()


def _ignore_python_3_13_0_server_bug() -> None:
    """On Python 3.13.0 only, keep one harmless asyncio bug from printing a traceback.

    There, a connection's transport that is garbage-collected after its server closed
    (a crawl stopped by Ctrl-C while the built-in site starts, say) calls
    ``Server._wakeup`` a second time, which fails on ``for waiter in None`` with a
    TypeError that Python prints as "Exception ignored".  Python 3.13.1 fixed it.  The
    hook drops exactly that error and hands every other one to the previous hook.
    """
    if sys.version_info[:3] != (3, 13, 0) or getattr(sys.unraisablehook, "testsite", False):
        return
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        frames = traceback.extract_tb(unraisable.exc_traceback)
        if not (
            isinstance(unraisable.exc_value, TypeError)
            and frames[-1:]
            and frames[-1].name == "_wakeup"
        ):
            previous(unraisable)

    hook.testsite = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


@contextlib.contextmanager
def serve(site: Site, port: int = 0, *, tls: ServerTLS | None = None) -> Iterator[str]:
    """Serve the site from a daemon thread with its own event loop on 127.0.0.1.

    Yields the base URL "http://127.0.0.1:PORT/", or "https://127.0.0.1:PORT/" with
    ``tls`` (see :func:`local_tls`).  On exit the runner is cleaned up, the loop stopped
    and the thread joined, so the port is closed afterwards.  A thread is needed because
    stages 1 and 2 block the calling thread in their own select loop.
    """
    with serve_hosts(site, ("127.0.0.1",), port, tls=tls) as urls:
        yield urls[0]
