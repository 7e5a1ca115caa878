"""The hostile catalogue, names half: host names whose DNS misbehaves (``fake_names()``).

A server can misbehave only once a crawler has found it; a name can fail before that,
in ``getaddrinfo``, which no loop can wait for (shared/resolver.py).  The site cannot
serve DNS, so a test that crawls these names replaces ``socket.getaddrinfo`` for the
block of :func:`fake_names`, in every thread (the lookups' threads too), and the
service counts each lookup of each name: one per host per crawl is the rule.

=================  ================================================================
``unknown.test``   fails at once: no such name (``EAI_NONAME``)
``held.test``      waits until :meth:`NameService.release`, or the block ends, then
                   fails as DNS that never answered does (``EAI_AGAIN``)
``site.test``      the site's own address, 127.0.0.1, at once
=================  ================================================================

Any other name, and every address, goes to the real ``getaddrinfo``.  A lookup held
longer than ``hold_limit`` seconds gives up by itself, so that a crawler which waits
for it on its loop's thread (the bug this catalogue catches) ends, late, instead of
hanging the test.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

UNKNOWN, HELD, SITE = "unknown.test", "held.test", "site.test"
#: The names of the catalogue, by kind.
DNS_KINDS = {"unknown": UNKNOWN, "held": HELD, "site": SITE}


class NameService:
    """A getaddrinfo for the catalogue's names, counting lookups; see the module's table."""

    def __init__(self, hold_limit: float) -> None:
        """Hold ``held.test`` lookups until release(), for at most ``hold_limit`` seconds."""
        self.hold_limit = hold_limit
        self.lookups: Counter[str] = Counter()  # name -> lookups asked, in any thread
        self.asked = threading.Event()  # set once a held lookup has begun
        self.released = threading.Event()
        self.timed_out = False  # True if a held lookup ended by hold_limit, not by release()
        self.threads: list[threading.Thread] = []  # the threads the held lookups ran in
        self._real = socket.getaddrinfo

    def release(self) -> None:
        """Let every held lookup, and every one to come, fail now."""
        self.released.set()

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        """socket.getaddrinfo, with the catalogue's names answered as its table says."""
        flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
        if host not in DNS_KINDS.values():
            return self._real(host, port, *args, **kwargs)
        if flags & socket.AI_NUMERICHOST:  # asked whether it is an address: it is not
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        self.lookups[host] += 1
        if host == SITE:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]
        if host == HELD:
            self.threads.append(threading.current_thread())
            self.asked.set()
            if not self.released.wait(self.hold_limit):
                self.timed_out = True
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@contextlib.contextmanager
def fake_names(hold_limit: float = 20.0) -> Iterator[NameService]:
    """Answer the catalogue's names as its table says, in every thread, during the block."""
    service = NameService(hold_limit)
    real = socket.getaddrinfo
    socket.getaddrinfo = service.getaddrinfo
    try:
        yield service
    finally:
        service.release()  # a lookup still held ends now, and its thread with it
        socket.getaddrinfo = real
