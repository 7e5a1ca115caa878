"""Name resolution: each (host, port) looked up once, its first address the one used.

``socket.getaddrinfo`` has no non-blocking form: while it waits for DNS, the whole
event loop waits with it.  Stages 1 and 2 accept that cost once per host and keep
the answer; stage 3 runs the same :func:`lookup` in a thread pool instead.

A name may have several addresses.  Every stage connects to the first one only, and
a try that fails there is a failed try (shared/REAL_WEB.md says why).
"""

from __future__ import annotations

import socket
from typing import Any

from shared.httpwire import address

#: (address family, socket address) as getaddrinfo gives them.
Destination = tuple[socket.AddressFamily, Any]


class Resolver:
    """A cache in front of the blocking ``getaddrinfo``."""

    def __init__(self) -> None:
        """Start with an empty cache."""
        self.cache: dict[tuple[str, int], Destination] = {}

    def resolve(self, url: str) -> Destination:
        """Return where to connect for a URL; raises socket.gaierror for an unknown host."""
        host_port = address(url)
        if host_port not in self.cache:
            # Blocks the loop (and every fetch in flight) until DNS answers, once per host.
            self.cache[host_port] = lookup(*host_port)
        return self.cache[host_port]


#: What stage 3 asks the kernel to hold of what a server sent, unread: see small_reads.
RECEIVE_BUFFER = 32 * 1024


def small_reads(addr_info: tuple[int, int, int, str, Any]) -> socket.socket:
    """A socket for stage 3 (aiohttp's socket_factory) on which no read takes much at once.

    asyncio reads up to 256 KiB at a time, and aiohttp parses all of it in one turn of the
    loop: from a server pouring out ``100 Continue`` heads that is some 10,000 responses,
    a second on a busy machine, while --timeout's timer waits its turn.  A small receive
    buffer (Linux doubles the 32 KiB asked for) keeps each read near the 64 KiB that
    stages 1 and 2 ask recv() for.
    """
    family, kind, proto, _, _ = addr_info
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    return sock


def lookup(host: str, port: int) -> Destination:
    """Look a host up (blocking) and return its first address; socket.gaierror if unknown."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, sockaddr
