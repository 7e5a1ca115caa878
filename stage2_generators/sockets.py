"""Stage 2 socket coroutines ("Factoring Coroutines With yield from"): waits end in a Future.

A socket's callback only resolves a Future; the code after the wait follows the `yield from`.
sock_handshake is ours (TLS on the same socket): asyncio puts TLS in its transports.
"""

import contextlib
import os
import socket
import ssl
from collections.abc import Callable
from functools import partial

from shared.tls import WOULD_BLOCK

from .events import get_running_loop
from .futures import Coroutine, Future, T


def _when_ready(sock: socket.socket, writable: bool, attempt: Callable[[], T]) -> Coroutine[T]:
    # Wait until `sock` is readable (or writable), then return attempt()'s result. Every
    # coroutine below suspends here, so the registration and the error handling live in one place.
    loop = get_running_loop()
    fut: Future[T] = Future()

    # The chapter's on_connected and on_readable, in one: it runs in the loop, not the coroutine.
    def on_ready() -> None:
        if fut.done():  # we were cancelled while this call sat in the ready queue
            return
        try:
            fut.set_result(attempt())
        except WOULD_BLOCK:
            return  # a spurious wake-up, or a TLS record not complete yet: try again next time
        except Exception as exc:
            # Usually an OSError such as ConnectionResetError. We also pass on bugs (say, a str
            # given to send()): the loudest place for them is the coroutine that made the call.
            # Escaping to the loop they would only be logged, and logged again on every turn,
            # since the socket stays ready while the coroutine waits forever. SystemExit and
            # KeyboardInterrupt are not Exceptions, so they still stop the loop at once.
            fut.set_exception(exc)

    add = loop.add_writer if writable else loop.add_reader
    remove = loop.remove_writer if writable else loop.remove_reader
    add(sock, on_ready)
    try:
        return (yield from fut)  # suspends: waits for the socket to be ready
    finally:
        remove(sock)  # on success, error and cancel alike


def sock_connect(sock: socket.socket, address: tuple[str, int]) -> Coroutine[None]:
    """Connect the non-blocking `sock`; raise OSError (e.g. ConnectionRefusedError) on failure."""
    # BlockingIOError: the TCP handshake goes on in the kernel; the socket turns writable when
    # it ends.
    with contextlib.suppress(BlockingIOError, InterruptedError):
        sock.connect(address)
        return  # connected at once

    def check_connected() -> None:
        # Writable means the handshake ended, not that it succeeded: SO_ERROR tells which.
        if err := sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            raise OSError(err, os.strerror(err))  # OSError picks the subclass for errno

    yield from _when_ready(sock, True, check_connected)  # suspends: waits for the TCP handshake


def sock_sendall(sock: socket.socket, data: bytes) -> Coroutine[None]:
    """Send all of `data`, waiting whenever the send buffer is full; OSError on failure."""
    remaining = memoryview(data)  # slicing a memoryview does not copy the bytes
    # Send at once, and wait only while the send buffer is full, as CPython and stage 1 do: a
    # request fits a new connection's buffer, so most fetches go from connect to recv without a
    # trip through the loop, and keep no Future or callback waiting to send.
    with contextlib.suppress(*WOULD_BLOCK):
        remaining = remaining[sock.send(remaining) :]
    while remaining:
        # suspends: waits for room in the send buffer. send() may take only part of `remaining`.
        sent = yield from _when_ready(sock, True, partial(sock.send, remaining))
        remaining = remaining[sent:]


def sock_handshake(sock: ssl.SSLSocket) -> Coroutine[None]:
    """Do the TLS handshake of a connected socket; SSLError (e.g. a bad certificate) on failure."""
    while True:
        try:
            # Returns None once done: certificate and host name verified (unless --insecure).
            return sock.do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError) as wait:
            # Not done yet: the TLS layer waits for the server's next message (it wants
            # to read) or for room to send its own (it wants to write): wait for that.
            writable = isinstance(wait, ssl.SSLWantWriteError)
        yield from _when_ready(sock, writable, lambda: None)  # suspends: until it can go on


def sock_recv(sock: socket.socket, n: int) -> Coroutine[bytes]:
    """Receive up to `n` bytes (b"" when the peer has closed); OSError on failure."""
    # Wait first, even if bytes are there: a coroutine that never waits starves the others, and
    # a server that sends faster than we parse would keep the loop (its timers, our --timeout)
    # to itself. Only what a TLS socket holds decrypted, which select() cannot see, is taken now.
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return sock.recv(n)
    # suspends: waits for the socket to be readable
    return (yield from _when_ready(sock, False, partial(sock.recv, n)))
