"""A stand-in for `ssl`, which Pyodide's Python does not have: only in the browser build.

The stages import ssl for TLS sockets, which a browser tab cannot open anyway.  This
module has the names they use, so that their code imports as the repository has it: the
exceptions (a stage catches SSLWantReadError, say, and must find the class), the socket
and context classes (for isinstance), and the constants.  Making a context fails with a
sentence, where real TLS would be needed.
"""


class SSLError(OSError):
    """As ssl.SSLError."""


class SSLZeroReturnError(SSLError):
    """As ssl.SSLZeroReturnError."""


class SSLWantReadError(SSLError):
    """As ssl.SSLWantReadError."""


class SSLWantWriteError(SSLError):
    """As ssl.SSLWantWriteError."""


class SSLSyscallError(SSLError):
    """As ssl.SSLSyscallError."""


class SSLEOFError(SSLError):
    """As ssl.SSLEOFError."""


class SSLCertVerificationError(SSLError, ValueError):
    """As ssl.SSLCertVerificationError."""


CertificateError = SSLCertVerificationError
CERT_NONE, CERT_OPTIONAL, CERT_REQUIRED = 0, 1, 2
NO_TLS = "TLS needs sockets, which a browser tab does not have: run this on the command line"


class SSLSocket:
    """As ssl.SSLSocket, for isinstance(); none is ever made here."""


class SSLObject:
    """As ssl.SSLObject, for isinstance(); none is ever made here."""


class SSLContext:
    """As ssl.SSLContext: making one fails, with the reason."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise OSError(NO_TLS)


def create_default_context(*args: object, **kwargs: object) -> SSLContext:
    """As ssl.create_default_context: fails, with the reason."""
    raise OSError(NO_TLS)
