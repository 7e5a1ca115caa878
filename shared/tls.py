"""HTTPS for every stage: one SSLContext, and what the hand-made stages need around it.

Stage 3 hands the context to aiohttp, which does TLS out of sight.  Stages 1 and 2 wrap
their own non-blocking sockets: the handshake and every read and write may then be
told "not now" by the TLS layer as well as by the kernel, and their event loops must
treat both the same way.  What a try means when TLS fails is decided here too, once.
"""

from __future__ import annotations

import functools
import socket
import ssl
from urllib.parse import urlsplit

from shared.httpwire import address

#: The "not now" of a non-blocking socket, plain or TLS: wait for readiness, try again.
#: The TLS layer says it with SSLWantReadError (no complete record has arrived yet) and
#: SSLWantWriteError (its own bytes must go out first); it is not an error.  A loop that
#: then waits for the readiness it wanted anyway is right but for one rare case: a read
#: that must first write (or the reverse) during a TLS 1.2 renegotiation, where it may
#: spin until --timeout.  TLS 1.3 has no renegotiation.
WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def ssl_context(*, insecure: bool = False, cafile: str | None = None) -> ssl.SSLContext:
    """Return the context every stage uses for https: the system's CAs, names checked.

    ``cafile`` adds a CA to trust besides the system's (a classroom's or the test
    site's).  ``insecure`` turns verification off altogether.  Raises OSError (or
    ssl.SSLError) when ``cafile`` cannot be read as PEM certificates.
    """
    # Loading the system's CAs takes tens of milliseconds: build each kind of context
    # once per process.  A context holds no per-connection state, so crawls may share it.
    return _context(insecure, cafile)


@functools.cache
def _context(insecure: bool, cafile: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context()  # verifies the certificate and the host name
    if cafile is not None:
        # create_default_context(cafile=...) would trust that CA *instead of* the system's.
        context.load_verify_locations(cafile)
    if insecure:
        context.check_hostname = False  # must be turned off before verify_mode
        context.verify_mode = ssl.CERT_NONE
    return context


def tls_socket(sock: socket.socket, url: str, context: ssl.SSLContext) -> socket.socket:
    """Return a connected socket ready to carry url's request: wrapped in TLS for https.

    The handshake is not done here (``do_handshake_on_connect=False``): on a
    non-blocking socket it takes several round trips, which the caller's event loop
    drives.  The wrapped socket takes over the file descriptor; the plain one is left
    detached.  An http URL gets its socket back unchanged.
    """
    if urlsplit(url).scheme != "https":
        return sock
    host, _ = address(url)
    return context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)


def certificate_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """Return the certificate failure behind an exception (itself or a cause), or None.

    aiohttp wraps the ssl module's error in one of its own (a subclass, raised ``from``
    the original): the innermost one found along ``__cause__`` is the ssl module's, so
    every stage records the same message.
    """
    found = None
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            found = cause
        cause = cause.__cause__
    return found
