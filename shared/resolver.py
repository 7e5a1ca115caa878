"""Name resolution for the hand-made stages 1 and 2: each (host, port) looked up once.

``socket.getaddrinfo`` has no non-blocking form: while it waits for DNS, the whole
event loop waits with it.  Stages 1 and 2 accept that cost once per host and keep
the answer; asyncio (stage 3) runs the same call in a thread pool instead.
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
            family, _, _, _, sockaddr = socket.getaddrinfo(*host_port, type=socket.SOCK_STREAM)[0]
            self.cache[host_port] = (family, sockaddr)
        return self.cache[host_port]
