"""Servers on raw sockets, for tests that choose every byte a crawler receives.

The test site (server.py) answers as a web server should, or misbehaves in the ways
the site defines.  Some tests need less: a server that sends back exactly the bytes
the test wrote, in pieces, or resets the connection once the request has begun, or
sends one page and then never speaks again.  Each is a small accept loop on
127.0.0.1 in a daemon thread; :func:`accepting` is that loop, the others are what
they do with a connection.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator

CONNECTION_TIMEOUT_S = 5.0  # a connection's blocking calls give up after this: no hung thread


def page(body: str, status: int = 200, content_type: str = "text/html") -> bytes:
    """Return a complete HTTP response with a Content-Length, closing the connection."""
    data = body.encode()
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
    return (head + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data


def links(*paths: str, filler: int = 0) -> bytes:
    """Return an HTML page linking to these paths, with ``filler`` bytes of text after them."""
    anchors = "".join(f'<a href="{path}">{path}</a>' for path in paths)
    return page(anchors + "<p>" + "x" * filler + "</p>")


def read_request(conn: socket.socket) -> bytes:
    """Read a request's head, however long it is: until its blank line, or the client's close."""
    request = b""
    while b"\r\n\r\n" not in request and (chunk := conn.recv(1 << 20)):
        request += chunk
    return request


def closed_port_url() -> str:
    """Return a URL on a 127.0.0.1 port that nothing listens on (connect is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/"


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A socket that listens but never accepts: connects succeed, no answer ever comes."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"


@contextlib.contextmanager
def accepting(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """Accept connections on 127.0.0.1 in a daemon thread and hand each to ``handle``.

    ``handle(conn)`` runs in the accepting thread, so connections are served one at a
    time unless it starts a thread of its own; it owns ``conn`` and closes it.  Yields
    the port; on exit the thread stops and the listener closes.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # so the thread notices the stop flag
    stop = threading.Event()

    def serve_forever() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(CONNECTION_TIMEOUT_S)
            handle(conn)

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@contextlib.contextmanager
def raw_server(
    answer: Callable[[str], bytes], received: list[bytes] | None = None, pieces: int = 1
) -> Iterator[str]:
    """Serve ``answer(path)``'s bytes to each request, one connection at a time.

    The whole request is read before answering, however long it is (a test can make
    the crawler send it in pieces), and kept in ``received``.  The answer goes out in
    ``pieces`` parts, 30 ms apart; an empty answer closes the connection.  Yields the
    base URL.
    """

    def handle(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            request = read_request(conn)
            if received is not None:
                received.append(request)
            if request:
                data = answer(request.split(b" ", 2)[1].decode())
                size = max(1, -(-len(data) // pieces))
                for start in range(0, len(data), size):
                    if start:
                        time.sleep(0.03)
                    conn.sendall(data[start : start + size])

    with accepting(handle) as port:
        yield f"http://127.0.0.1:{port}/"


@contextlib.contextmanager
def resetting_server() -> Iterator[str]:
    """A server that reads the first 64 KiB of each request, then resets the connection.

    The reset comes once the request has begun to arrive, so the client meets it in
    send(), never in its connect.  Yields the base URL.
    """

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            received = 0
            while received < 64 * 1024 and (chunk := conn.recv(64 * 1024)):
                received += len(chunk)
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    with accepting(handle) as port:
        yield f"http://127.0.0.1:{port}/"


@contextlib.contextmanager
def lingering_tls_server(context: ssl.SSLContext) -> Iterator[str]:
    """An https server that sends one page, then keeps the connection open until the client
    closes it (as a keep-alive server may, whatever the request said).

    Once the page is in, the socket never turns readable again: a client that leaves
    decrypted bytes in its TLS buffer and waits for select() waits until its timeout.
    ``context`` is the server's.  Yields the base URL; every path gets the same
    5 000-byte page.
    """
    body = b"<html><body>" + b"x" * 5000 + b"</body></html>"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"
    response = head % len(body) + body

    def answer(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
            tls.settimeout(10)
            read_request(tls)
            tls.sendall(response)
            while tls.recv(4096):  # linger: only the client's close ends the connection
                pass

    def handle(conn: socket.socket) -> None:
        conn.settimeout(10)
        threading.Thread(target=answer, args=(conn,), daemon=True).start()

    with accepting(handle) as port:
        yield f"https://127.0.0.1:{port}/"
