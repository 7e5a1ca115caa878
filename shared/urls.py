"""URL rules: one spelling per page, and one function that decides what to crawl.

Every stage calls :func:`normalize` on every URL it meets and asks
:meth:`UrlRules.allowed` before it queues a link, so the three crawlers cannot
disagree about what counts as "the same page" or "a page we crawl".
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import quote, urlsplit, urlunsplit

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

# Characters left alone when re-quoting a path or query: the reserved and unreserved
# sets of RFC 3986 plus "%", so an already-quoted URL keeps its escapes.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"


def _remove_dot_segments(path: str) -> str:
    """Resolve "." and ".." in a path (RFC 3986 section 5.2.4), keeping a trailing slash."""
    out: list[str] = []
    segments = path.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == ".":
            if last:
                out.append("")
        elif segment == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(segment)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def normalize(url: str) -> str | None:
    """Return the one spelling of an absolute http(s) URL, or None if it is not one.

    Lower-cases the scheme and host, drops the default port and the fragment, turns
    an empty path into "/", resolves dot segments and quotes characters that may not
    appear raw (spaces, non-ASCII).  Anything unparsable gives None, never an error.
    """
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES or not parts.hostname:
            return None
        host = parts.hostname  # already lower case, brackets of IPv6 removed
        port = parts.port  # raises ValueError for a non-numeric or out-of-range port
        if not host.isascii():
            host = host.encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        return None
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = quote(_remove_dot_segments(parts.path or "/"), safe=_SAFE_PATH)
    query = quote(parts.query, safe=_SAFE_QUERY)
    return urlunsplit((scheme, netloc, path, query, ""))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def lenient_host(host: str) -> str:
    """Return the last two labels of a host name: "www.example.com" -> "example.com"."""
    return ".".join(host.split(".")[-2:])


class UrlRules:
    """Decide whether a URL is one this crawl fetches.

    The rules follow the chapter's crawl.py.  The roots define the scope: in strict
    mode a URL's host must be a root's host or its "www." twin; in lenient mode it
    needs only the same last two labels.  IP literals must match exactly.  Ports are
    not part of the scope, as in the chapter.  ``exclude`` is a regular expression
    searched in the whole URL.
    """

    def __init__(self, roots: Iterable[str], *, strict: bool = True, exclude: str | None = None):
        """Build the scope from the (already normalised) root URLs."""
        self.strict = strict
        self.exclude = re.compile(exclude) if exclude else None
        self.root_hosts: set[str] = set()
        for root in roots:
            host = urlsplit(root).hostname
            if host:
                self.root_hosts.add(host if strict or _is_ip(host) else lenient_host(host))

    def host_allowed(self, host: str) -> bool:
        """Tell whether a (lower-case) host is inside the crawl's scope."""
        if host in self.root_hosts:
            return True
        if _is_ip(host):
            return False
        if self.strict:
            twin = host.removeprefix("www.") if host.startswith("www.") else "www." + host
            return twin in self.root_hosts and not _is_ip(twin)  # "www.127.0.0.1" is no twin
        return lenient_host(host) in self.root_hosts

    def allowed(self, url: str) -> bool:
        """Tell whether to crawl this normalised URL: an http(s) URL in scope, not excluded."""
        if self.exclude is not None and self.exclude.search(url):
            return False
        parts = urlsplit(url)
        if parts.scheme not in SCHEMES or not parts.hostname:
            return False
        return self.host_allowed(parts.hostname)
