"""HTTPS for the test site: a throw-away CA and a certificate it signs, made by trustme.

``serve(site, tls=local_tls(directory))`` serves the same site over https, with a
certificate for 127.0.0.1 and localhost from a throw-away CA (made by ``trustme``, a
test dependency), and yields "https://127.0.0.1:PORT/".  A crawler trusts that CA with
``--cafile`` (``Options(cafile=...)``).
"""

from __future__ import annotations

import importlib
import os
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerTLS:
    """What serving https takes: the server's SSLContext, and the CA file clients must trust."""

    context: ssl.SSLContext
    cafile: str


def local_tls(directory: str, hosts: Sequence[str] = ("127.0.0.1", "localhost")) -> ServerTLS:
    """Make a throw-away CA and a certificate it signs for ``hosts``, for :func:`serve`.

    The CA's certificate is written to a new PEM file in ``directory`` (give it to a
    crawler with --cafile); its key stays in memory and is gone with the process, so it
    can sign nothing else.  Raises RuntimeError if trustme is not installed.
    """
    # trustme is a test dependency: imported on demand, so that neither the crawlers nor
    # their lint environment need it.
    try:
        trustme = importlib.import_module("trustme")
    except ImportError as exc:
        raise RuntimeError("serving https needs trustme: python -m pip install trustme") from exc
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # a server's context
    ca.issue_cert(*hosts).configure_cert(context)
    fd, cafile = tempfile.mkstemp(prefix="ca-", suffix=".pem", dir=directory)
    os.close(fd)
    ca.cert_pem.write_to_path(cafile)
    return ServerTLS(context, cafile)
