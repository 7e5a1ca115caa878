"""A bare load client, to measure the ceiling: how many requests a second the site can serve.

``python -m shared.tools.bench.load URL --pages N [--keep-alive] [--seconds S] [--connections C]``
keeps C connections busy for S seconds asking for ``/`` and ``/p/1`` .. ``/p/N-1`` in
turn, and prints one JSON line with the count.  It does as little per request as a
client can: non-blocking sockets on one selector, no parsing beyond the header block's
Content-Length, no records.  A crawler can be no faster than this on the same site.

Without --keep-alive every request has its own connection (``Connection: close``, as
stages 1 and 2 and the threaded baseline do); with it, each connection carries request
after request (as aiohttp does for stage 3).  Only 127.0.0.1 is accepted: this is a
load test, and it goes nowhere else.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import selectors
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)


@dataclass
class _Connection:
    """One connection's state between two readiness events."""

    sock: socket.socket
    buffer: bytearray = field(default_factory=bytearray)


def _complete(buffer: bytearray) -> bool:
    """True when the buffer holds a whole response framed by Content-Length."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return False
    length = _LENGTH.search(buffer, 0, end + 2)
    return length is not None and len(buffer) >= end + 4 + int(length.group(1))


def load(
    url: str,
    paths: Sequence[str],
    *,
    keep_alive: bool,
    seconds: float = 2.0,
    connections: int = 32,
    max_requests: int = 500_000,
) -> dict[str, float | int | bool]:
    """Send requests to ``url``'s host for ``seconds`` (or ``max_requests``); count the answers.

    Returns the requests answered, the errors, the seconds taken and the rate.
    """
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1" or parts.port is None:
        raise ValueError(f"load tests go to http://127.0.0.1:PORT only, not {url!r}")
    address = (parts.hostname, parts.port)
    connection = "keep-alive" if keep_alive else "close"
    host = f"{parts.hostname}:{parts.port}"
    requests: Iterator[bytes] = itertools.cycle(
        [
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: {connection}\r\n\r\n".encode()
            for path in paths
        ]
    )
    selector = selectors.DefaultSelector()
    answered = errors = started = 0
    begin = time.monotonic()
    deadline = begin + seconds

    def start(conn: _Connection | None) -> bool:
        """Send the next request, on ``conn`` or a new connection; False once time is up."""
        nonlocal started
        if started >= max_requests or time.monotonic() >= deadline:
            return False
        started += 1
        if conn is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect_ex(address)  # completes in the background: wait for writable
            selector.register(sock, selectors.EVENT_WRITE, _Connection(sock))
        else:
            conn.sock.send(next(requests))  # a request is far smaller than a socket buffer
        return True

    def finish(conn: _Connection) -> None:
        selector.unregister(conn.sock)
        conn.sock.close()

    for _ in range(connections):
        start(None)
    while selector.get_map():
        for key, mask in selector.select(timeout=1.0):
            conn = key.data
            try:
                if mask & selectors.EVENT_WRITE:  # connected: send the first request
                    conn.sock.send(next(requests))
                    selector.modify(conn.sock, selectors.EVENT_READ, conn)
                    continue
                data = conn.sock.recv(256 * 1024)
            except OSError:
                errors += 1
                finish(conn)
                start(None)
                continue
            conn.buffer += data
            if keep_alive and data:
                if _complete(conn.buffer):
                    answered += 1
                    conn.buffer.clear()
                    if not start(conn):
                        finish(conn)
            elif not data:  # the server closed: the end of a Connection: close response
                if not keep_alive and _complete(conn.buffer):
                    answered += 1
                else:
                    errors += 1
                finish(conn)
                start(None)
    elapsed = time.monotonic() - begin
    selector.close()
    return {
        "requests": answered,
        "errors": errors,
        "seconds": round(elapsed, 4),
        "per_s": round(answered / elapsed, 1) if elapsed > 0 else 0.0,
        "keep_alive": keep_alive,
        "connections": connections,
    }


def site_paths(pages: int) -> list[str]:
    """The test site's page paths: ``/`` and ``/p/1`` .. ``/p/pages-1``."""
    return ["/"] + [f"/p/{n}" for n in range(1, pages)]


def main(argv: Sequence[str] | None = None) -> None:
    """Run one load test from the command line and print its JSON line."""
    parser = argparse.ArgumentParser(description="Measure the test site's requests per second.")
    parser.add_argument("url", help="the site, http://127.0.0.1:PORT/")
    parser.add_argument("--pages", type=int, default=300, help="the site's page count")
    parser.add_argument("--keep-alive", action="store_true", help="reuse connections")
    parser.add_argument("--seconds", type=float, default=2.0, help="how long to load (2)")
    parser.add_argument("--connections", type=int, default=32, help="connections at once (32)")
    parser.add_argument("--max-requests", type=int, default=500_000, help="at most this many")
    args = parser.parse_args(argv)
    if not 0 < args.seconds <= 60 or not 0 < args.connections <= 1000:
        parser.error("--seconds must be in (0, 60] and --connections in 1..1000")
    result = load(
        args.url,
        site_paths(args.pages),
        keep_alive=args.keep_alive,
        seconds=args.seconds,
        connections=args.connections,
        max_requests=args.max_requests,
    )
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
