"""Name resolution: each (host, port) looked up once per crawl, in a thread, first address used.

A selector waits for file descriptors, and ``socket.getaddrinfo`` has none: it is a
blocking library call that asks DNS and returns when the answer is in, which can take
seconds, or as long as the system's resolver gives it.  Called on the loop's thread, it
would stop every fetch in flight while it waits.  So it is the one call a hand-made loop
sends to another thread, as asyncio does (``loop.getaddrinfo`` is ``run_in_executor``,
a thread pool), and the answer comes back the way asyncio's ``call_soon_threadsafe``
brings it: the thread puts it in a queue and writes one byte to a socket the loop
watches (the "self-pipe"), so that ``select()`` wakes up and the loop runs what waited.

:class:`Resolver` is that, written once for stages 1 and 2: each stage waits for its
answer in its own style (a callback, a Future).  Stage 3 gives aiohttp the same thread
and the same rule through :func:`in_thread` (shared/aiohttp_wire.py's ``FirstAddress``),
its answer handed over by asyncio's own ``call_soon_threadsafe``.

Each host is looked up once per crawl, its failure remembered too: the later URLs of a
host whose DNS fails (or never answers) wait for that one lookup, and none starts
another.  A host that is an address needs no DNS and no thread (asyncio checks the same).
A name may have several addresses: every stage connects to the first one only, and a try
that fails there is a failed try (shared/REAL_WEB.md says why).
"""

from __future__ import annotations

import contextlib
import copy
import socket
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, Self, TypeVar

from shared.httpwire import address

#: (address family, socket address) as getaddrinfo gives them.
Destination = tuple[socket.AddressFamily, Any]
#: What a lookup ends with: where to connect, or why not (socket.gaierror, say).
Answer = Destination | OSError
HostPort = tuple[str, int]


class Settleable(Protocol):
    """What :func:`settle` needs of a Future: stage 2's and asyncio's both have it."""

    def done(self) -> bool:
        """Tell whether the future has its outcome already (or was cancelled)."""

    def set_result(self, result: Any) -> None:
        """Give the future its result."""

    def set_exception(self, exception: BaseException) -> None:
        """Give the future its exception."""


F = TypeVar("F", bound=Settleable)


class Resolver:
    """One lookup per host and port per crawl, each in a thread, for a hand-made loop.

    The loop must watch :attr:`reader` and call :meth:`on_readable` when it is readable
    (both stages do it in their ``crawl``); ``with resolver:`` closes it at the end.
    A stage waits for an answer in its own style: :meth:`resolve` calls a callback back,
    :meth:`resolved` settles a Future.
    """

    def __init__(self) -> None:
        """Start with nothing known, and open the self-pipe."""
        self.answers: dict[HostPort, Answer] = {}  # the cache: every answer, failures too
        self.waiting: dict[HostPort, list[Callable[[Answer], object]]] = {}  # host -> its waiters
        # Filled by the lookups' threads, emptied by the loop: a deque's append and popleft
        # are safe between threads, and nothing else is shared with them.
        self.arrived: deque[tuple[HostPort, Answer]] = deque()
        self.reader, self._writer = socket.socketpair()  # the self-pipe: the loop watches reader
        self.reader.setblocking(False)
        self._writer.setblocking(False)

    def resolve(self, url: str, then: Callable[[Answer], object]) -> None:
        """Call ``then(answer)`` once url's host is looked up: at once if it is known already.

        Otherwise :meth:`on_readable` calls it, on the loop, once the lookup's thread has
        handed the answer over.  Every URL of a host waits for the same one lookup.
        """
        key = address(url)
        if key not in self.answers and key not in self.waiting:
            try:  # an address needs no DNS: getaddrinfo answers at once, on this thread
                self.answers[key] = lookup(*key, socket.AI_NUMERICHOST)
            except socket.gaierror:  # a name: DNS must answer, in a thread
                self.waiting[key] = []
                in_thread(lambda: lookup(*key), lambda answer: self._hand_over(key, answer))
        if key in self.answers:
            # Known: no wait, as a done Future does not pause its waiter (chapter, footnote 12).
            then(fresh(self.answers[key]))
        else:
            self.waiting[key].append(then)

    def resolved(self, url: str, future: F) -> F:
        """Return ``future``, to be resolved (settled) with the answer for url's host.

        The host is looked up as :meth:`resolve` does; stage 2 waits with ``yield from``.
        """
        self.resolve(url, settle(future))
        return future

    def _hand_over(self, key: HostPort, answer: Answer) -> None:
        # Runs in the lookup's thread: it touches nothing of the loop's but the deque and
        # one byte, which wakes the loop's select().  (asyncio: call_soon_threadsafe.)
        self.arrived.append((key, answer))
        # Full: the loop has a byte to wake it already.  Closed: the crawl is over.
        with contextlib.suppress(OSError):
            self._writer.send(b"\0")

    def on_readable(self, *args: object) -> None:
        """The loop's callback for :attr:`reader`: give the arrived answers to their waiters."""
        # Stage 1 passes (key, mask), stage 2 nothing.
        with contextlib.suppress(OSError):  # BlockingIOError: nothing (more) to read
            while self.reader.recv(4096):
                pass
        while self.arrived:
            key, answer = self.arrived.popleft()
            self.answers[key] = answer
            for then in self.waiting.pop(key):
                then(fresh(answer))

    def close(self) -> None:
        """Close the self-pipe.  A lookup still under way ends in its thread, unheard."""
        self.reader.close()
        self._writer.close()

    def __enter__(self) -> Self:
        """``with resolver:`` closes it when the block ends."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the self-pipe: see :meth:`close`."""
        self.close()


def in_thread(work: Callable[[], Destination], then: Callable[[Answer], object]) -> None:
    """Run ``work()`` in a new daemon thread, then ``then(its answer or its OSError)`` there.

    ``then`` runs in that thread: it must hand the answer to the loop thread-safely.
    """
    # Imported here, at the first lookup of a name, not when a stage is imported: stages 1
    # and 2 build their loops from selectors alone, and this is the one place where they
    # need a thread, the place where asyncio too uses one (loop.getaddrinfo runs in its
    # executor).  A crawl of addresses only, as the test site's, loads no threading at all.
    import threading

    def run() -> None:
        try:
            answer: Answer = work()
        except OSError as exc:  # socket.gaierror: an unknown name, DNS that failed
            answer = exc
        then(answer)

    # A daemon: a lookup that never ends (DNS that never answers) must not hold the
    # program's exit, after the crawl's end or after Ctrl-C.  One thread per name, not a
    # pool: a stuck lookup cannot keep other names waiting for a free worker.
    threading.Thread(target=run, name="getaddrinfo", daemon=True).start()


def settle(future: Settleable) -> Callable[[Answer], None]:
    """Return a ``then`` for :meth:`Resolver.resolve` that resolves ``future`` with the answer.

    A future already done (its waiter cancelled, at a timeout or a Ctrl-C) is left alone.
    """

    def then(answer: Answer) -> None:
        if future.done():
            return
        if isinstance(answer, OSError):
            future.set_exception(answer)
        else:
            future.set_result(answer)

    return then


def fresh(answer: Answer) -> Answer:
    """The answer to hand to one waiter: an error is a copy of its own.

    One error serves every URL of its host, and each raises it: raised again and again,
    one exception object would gather every raise's traceback (asyncio's Future resets it).
    """
    return copy.copy(answer) if isinstance(answer, OSError) else answer


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


def lookup(host: str, port: int, flags: int = 0) -> Destination:
    """Look a host up (blocking) and return its first address; socket.gaierror if unknown.

    With ``flags=socket.AI_NUMERICHOST`` only an address is accepted, and nothing blocks.
    """
    family, _, _, _, sockaddr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=flags
    )[0]
    return family, sockaddr
