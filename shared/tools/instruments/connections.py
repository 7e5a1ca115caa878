"""When each try of a fetch has its connection, for the instruments that time it.

No stage says so: a crawler has no line for its instruments.  An instrument learns it
where each stage's machinery shows it anyway, from what it hears as an observer
(shared/observe.py):

* stage 1: the loop is about to run a Fetcher's ``_on_connected`` for a socket that has
  a peer.  ``getpeername()`` asks without changing anything, where reading ``SO_ERROR``,
  the Fetcher's own check, would clear the error it is about to read;
* stage 2: a Task resumes a chain paused in ``sock_connect`` with a value, not an error:
  the socket's callback has checked ``SO_ERROR`` already, and the connect succeeded;
* stage 3: aiohttp connects inside ``session.get``, out of sight of any loop of ours, and
  tells the session's trace configs: :meth:`Connections.session_traces` hands the
  session ours (aiohttp_traces.py).

A connect that succeeds without a wait takes no step of its own and would not be heard;
Linux makes a non-blocking connect wait even to 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from selectors import SelectorKey
from typing import Any

from shared.observe import Chorus, Observer
from shared.tools.instruments.trace import coroutine_chain


class Connections(Observer):
    """An observer that is told ``connected(url)`` each time a try has its connection."""

    def connected(self, url: str) -> None:
        """The current try of url has its connection: connecting is over, reading begins."""

    def callback(self, callback: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Stage 1: a Fetcher's ``_on_connected`` is about to run: did its connect succeed?"""
        url = getattr(getattr(callback, "__self__", None), "url", None)
        if getattr(callback, "__name__", "") != "_on_connected" or not isinstance(url, str):
            return
        key = args[0] if args else None
        sock = key.fileobj if isinstance(key, SelectorKey) else None
        if isinstance(sock, socket.socket) and has_peer(sock):
            self.connected(url)

    def resume(self, task: Any, value: Any) -> None:
        """Stage 2: a task resumes; from a wait in ``sock_connect`` without an error, it is
        connected."""
        if isinstance(value, BaseException) or not waits_in(task, "sock_connect"):
            return
        _, url = coroutine_chain(getattr(task, "_coro", None))
        if url is not None:
            self.connected(url)

    def session_traces(self) -> list[Any]:
        """Stage 3: aiohttp's trace configs that tell :meth:`connected`."""
        from shared.tools.instruments.aiohttp_traces import connection_traces  # stage 3 only

        return connection_traces(self)


def waits_in(task: Any, name: str) -> bool:
    """Tell whether a task's chain of coroutines is paused in a function of that name.

    Asked at every step of stage 2, so it reads the names alone (a frame's local
    variables cost a copy each).
    """
    coro = getattr(task, "_coro", None)
    while (code := getattr(coro, "gi_code", None) or getattr(coro, "cr_code", None)) is not None:
        if code.co_name == name:
            return True
        coro = getattr(coro, "gi_yieldfrom", None) or getattr(coro, "cr_await", None)
    return False


def has_peer(sock: socket.socket) -> bool:
    """Tell whether a socket is connected: it has a peer (a failed connect has none)."""
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def tell_connected(observer: Observer | None, url: str) -> None:
    """Tell each :class:`Connections` among those watching (one, or a chorus) that url's
    try has its connection: for a crawler that knows it itself (the bench's threads)."""
    if isinstance(observer, Connections):
        observer.connected(url)
    elif isinstance(observer, Chorus):
        for one in observer.observers:
            tell_connected(one, url)
