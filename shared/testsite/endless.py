"""The endless and slow misbehaviours: servers that never finish, bounded by the site itself.

With ``Site(endless=True)`` the root links to the pages of :data:`ENDLESS`, each a way a
server keeps a client waiting: interim ``100 Continue`` heads poured out forever, a body
of one-byte chunks with long chunk extensions, a header line that never ends, a byte a
second, a reset in the middle of the body, a close in the middle of the head, and a
keep-alive connection closed without a word.  The fast ones send as fast as the client
reads, faster than any parser: a crawler whose fetch reads on while bytes are waiting
keeps its loop to itself, and its timers (``--timeout``) and other fetches starve.  A
fair loop ends each of their tries at its timeout, with the other fetches unharmed.

The site bounds them itself: after ``site.endless_s`` seconds (None: never) the server
closes the connection, so even a crawler that never times out ends, with an error.  How
long each client held one of these connections is recorded in ``site.held``, as
``(path, seconds)``, for tests to compare with the crawler's ``--timeout``.

The oracle's records (oracle.py) are the same for every stage: each case of
:data:`ENDLESS_FAILING` fails every try, whatever the stage reports as the reason (its
own timeout, a size limit of its parser, or the site's close); the keep-alive pages
answer like any page.  Their server side is :func:`misbehave`, called by server.py.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

from aiohttp import web

from shared.testsite.pages import HTML, Resource, html_page

if TYPE_CHECKING:
    from shared.testsite.site import Site

#: Endless case name -> the path that shows it (present with ``endless=True``).
ENDLESS: dict[str, str] = {
    name: f"/endless/{name}"
    for name in (
        "interim-flood",
        "tiny-chunks",
        "endless-head",
        "trickle",
        "reset-mid-body",
        "close-before-head",
        "keepalive-silent",
    )
}

#: The cases that never give a complete response: every try fails, in every stage.
ENDLESS_FAILING = frozenset(ENDLESS) - {"keepalive-silent"}

#: The pages the keep-alive page links to, served the same way: more connections to reuse.
KEEPALIVE_PAGES = tuple(f"{ENDLESS['keepalive-silent']}/{n}" for n in range(1, 4))

#: How long the server waits between two bytes of the trickle.
TRICKLE_PAUSE_S = 1.0

_INTERIM = b"HTTP/1.1 100 Continue\r\n\r\n"
_CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
# A one-byte chunk whose size line carries 100 bytes of extension: a valid line, well under
# every parser's line limit, a hundred bytes of framing and a whole parser step per byte of
# body.  A parser takes it far slower than the server pours it out.
_TINY_CHUNK = b"1;ext=" + b"x" * 100 + b"\r\n<\r\n"
_BLOCK = 64 * 1024  # about what the fast cases write at a time
_TRICKLED = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<p>"
_CUT_BODY = _TRICKLED + b"r" * 2000  # the start of a body of 100,000 bytes

# Connections that have had their one response (a keep-alive page, or any page of a
# ``Site(silent_close=True)``): the next request on one is met with a close, no answer.
_spent: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
# Connections that have carried a request: a client that pools sends its next one on them.
_used: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()
# Connections that have had a hangup-kept page (traps.py): the next request on one is
# read, counted, and met with a close.
_hang_up: weakref.WeakSet[asyncio.BaseTransport] = weakref.WeakSet()


def endless_pages() -> dict[str, Resource]:
    """The pages of the endless cases; only ``kind`` matters for the failing ones."""
    found = {path: Resource(kind=name, content_type=None) for name, path in ENDLESS.items()}
    links = [path.removeprefix(ENDLESS["keepalive-silent"] + "/") for path in KEEPALIVE_PAGES]
    items = "".join(f'<p><a href="keepalive-silent/{link}">{link}</a></p>' for link in links)
    found[ENDLESS["keepalive-silent"]] = keepalive_page(
        "Kept alive, closed silently", items, KEEPALIVE_PAGES
    )
    for path in KEEPALIVE_PAGES:
        found[path] = keepalive_page(f"Kept alive {path[-1]}", "<p>Nothing more.</p>", ())
    return found


def keepalive_page(title: str, inner: str, links: Iterable[str]) -> Resource:
    """A keep-alive page: an ordinary answer after which its connection is closed silently."""
    plain = html_page(title, inner, list(links))
    return Resource(kind="keepalive-silent", body=plain.body, links=plain.links, content_type=HTML)


def closed_silently(request: web.Request) -> bool:
    """True if the request came on a connection that already had its one response."""
    return request.transport is not None and request.transport in _spent


def kept_alive(request: web.Request) -> bool:
    """True if the request came on a connection that carried one before; note that it has."""
    transport = request.transport
    if transport is None:
        return False
    reused = transport in _used
    _used.add(transport)
    return reused


def spend(request: web.Request) -> None:
    """Give the request's connection its one response: the next request on it is refused."""
    if request.transport is not None:
        _spent.add(request.transport)


def hang_up_next(request: web.Request) -> None:
    """Let the request's connection stay open for one more request, which it hangs up on."""
    if request.transport is not None:
        _hang_up.add(request.transport)


def hangs_up(request: web.Request) -> bool:
    """True if the request came on a connection that hangs up on its next request."""
    return request.transport is not None and request.transport in _hang_up


async def misbehave(site: Site, request: web.Request, path: str, kind: str) -> bool:
    """Play one failing endless case on the request's connection until it is over.

    It is over when the client hangs up, when the case ends by itself, or when the
    site's bound (``site.endless_s``) is reached.  Returns True if the connection must
    end with a reset rather than a close (server.py's ``send_raw`` then closes it).
    """
    started = time.monotonic()
    try:
        async with asyncio.timeout(site.endless_s):
            if kind == "interim-flood":
                await pour(request, itertools.repeat(_INTERIM * (_BLOCK // len(_INTERIM))))
            elif kind == "tiny-chunks":
                blocks = itertools.repeat(_TINY_CHUNK * (_BLOCK // len(_TINY_CHUNK)))
                await pour(request, itertools.chain([_CHUNKED_HEAD], blocks))
            elif kind == "endless-head":
                header = [b"HTTP/1.1 200 OK\r\nX-Endless: "]
                await pour(request, itertools.chain(header, itertools.repeat(b"a" * _BLOCK)))
            elif kind == "trickle":
                await pour(request, (_TRICKLED[i : i + 1] for i in range(len(_TRICKLED))), True)
            elif kind == "reset-mid-body":
                await pour(request, [_CUT_BODY])
                await asyncio.sleep(0.3)  # the client is in the middle of the body now
                return True
            elif kind == "close-before-head":
                await asyncio.sleep(0.1)
                await pour(request, [b"HTTP/1.1 200 OK\r\nContent-"])
            else:
                raise ValueError(f"not an endless case: {kind!r}")
    except (TimeoutError, ConnectionError):
        pass  # the site's bound, or the client gone: either way the connection ends here
    finally:
        site.held.append((path, time.monotonic() - started))
    return False


async def pour(request: web.Request, pieces: Iterable[bytes], trickle: bool = False) -> None:
    """Write pieces while the client takes them, stopping as soon as it has hung up.

    A fast client gets them as fast as it reads (the writer waits only while the
    client's side is full); with ``trickle`` a piece goes every :data:`TRICKLE_PAUSE_S`.
    """
    for piece in pieces:
        transport = still_open(request)
        if transport is None:
            return
        transport.write(piece)
        await request.writer.drain()
        # drain() returns at once while the socket takes everything: without a turn of the
        # loop here, a client reading as fast as this writes would keep the site's loop to
        # the flood, its other pages' timers starving and its hang-up never noticed.  The
        # very fault the fairness tests look for in a crawler.
        await asyncio.sleep(0)
        if trickle:  # in short naps, to notice a client that hangs up between two bytes
            for _ in range(10):
                await asyncio.sleep(TRICKLE_PAUSE_S / 10)
                if still_open(request) is None:
                    return


def still_open(request: web.Request) -> asyncio.Transport | None:
    """The request's transport, or None once the client's connection is gone or going.

    Asked anew each time, as aiohttp forgets a request's transport once its connection is lost.
    """
    transport = request.transport
    return None if transport is None or transport.is_closing() else transport
