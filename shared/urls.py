"""URL rules: one spelling per page, and one function that decides what to crawl.

Every stage calls :func:`normalize` on every URL it meets and asks
:meth:`UrlRules.allowed` before it queues a link, so the three crawlers cannot
disagree about what counts as "the same page" or "a page we crawl".

These run for every link of every page, so each has a fast path for the spellings
most links have ("/p/7", "page.html", "https://host/a?b=1#c"), which a regular
expression recognises and string slicing finishes.  Anything else takes the general
path, built on urllib.parse.  The fast path gives exactly what the general one
would: tests/test_links.py compares them on many thousands of generated URLs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

#: The longest host name DNS can hold (RFC 1035).  A longer one is no URL of ours, and
#: is refused before the IDNA codec, whose time grows faster than the name, reads it.
MAX_HOST = 253
#: The longest label (the part between two dots) of a host name DNS can hold (RFC 1035).
MAX_LABEL = 63

# What a host name may hold (RFC 3986's reg-name, once its escapes are decoded): letters,
# digits, "-._~" and the sub-delimiters.  A backslash, a space or a "<" makes no URL.
_REG_NAME = re.compile(r"[a-z0-9_.~!$&'()*+,;=-]+")

# RFC 3986's unreserved characters: an escape of one of them ("%7E") means the character
# itself ("~"), and section 6.2.2.2 spells it so.  Every other escape stays, in upper case.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})|%")
_NORMAL_ESCAPE = re.compile(r"%[0-9A-F]{2}")
_UNRESERVED_ESCAPES = frozenset(f"%{ord(c):02X}" for c in _UNRESERVED)

# Characters left alone when re-quoting a path or query: the reserved and unreserved
# sets of RFC 3986 plus "%", so an already-quoted URL keeps its escapes.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"


def _spell_escape(match: re.Match[str]) -> str:
    """The one spelling of an escape: its character if unreserved, else upper case.

    A "%" that starts no escape ("100%", "%zz") is spelled "%25", so that decoding cannot
    make a new escape of what follows it ("%%32e" is not "%2e", which is ".").
    """
    hex_digits = match[1]
    if hex_digits is None:
        return "%25"
    char = chr(int(hex_digits, 16))
    return char if char in _UNRESERVED else "%" + hex_digits.upper()


def _normal_escapes(text: str) -> str:
    """Percent-encoding normalisation (RFC 3986 section 6.2.2.2), in one pass."""
    return _ESCAPE.sub(_spell_escape, text) if "%" in text else text


def _escapes_are_normal(text: str) -> bool:
    """Tell whether _normal_escapes would leave text as it is: each "%" starts "%XX" in
    upper case, for an octet that is not an unreserved character."""
    if "%" not in text:
        return True
    escapes = _NORMAL_ESCAPE.findall(text)
    return len(escapes) == text.count("%") and _UNRESERVED_ESCAPES.isdisjoint(escapes)


def _valid_host(host: str) -> bool:
    """Tell whether a lower-case ASCII host name is one DNS can hold: RFC 3986's reg-name
    characters, at most MAX_HOST in all, at most MAX_LABEL between two dots."""
    return (
        len(host) <= MAX_HOST
        and _REG_NAME.fullmatch(host) is not None
        and max(map(len, host.split("."))) <= MAX_LABEL
    )


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


# A URL that normalize() returns as it is, less its fragment: a lower-case http(s)
# scheme and host, no user name, a port that is neither the default nor spelled with a
# leading zero, a path and a query of characters quote() leaves alone, and a query
# that is not empty ("x?" loses its "?").  Dot segments, escapes to respell and a host
# too long are ruled out apart (see _as_is), as a regular expression would say it less
# clearly.
_PATH_CLASS = r"[A-Za-z0-9_.~!$&'()*+,;=:@%/-]"
_QUERY_CLASS = r"[A-Za-z0-9_.~!$&'()*+,;=:@%/?-]"
_CLEAN = re.compile(
    rf"(?P<scheme>https?)://(?P<host>[a-z0-9.-]+)(?::(?P<port>[1-9][0-9]{{0,4}}))?"
    rf"(?P<target>(?P<path>/{_PATH_CLASS}*)(?:\?{_QUERY_CLASS}+)?)(?:#.*)?",
    re.DOTALL,
)


def _as_is(match: re.Match[str]) -> bool:
    """Tell whether a URL that _CLEAN matched is its own normal form (less the fragment)."""
    if "/." in match["path"]:  # "/./", "/../", or a harmless "/.well-known": general path
        return False
    host = match["host"]
    if len(host) > MAX_HOST or max(map(len, host.split("."))) > MAX_LABEL:
        return False  # refused by the general path
    if not _escapes_are_normal(match["target"]):  # "%7e", "%2f", "100%": respelled there
        return False
    port = match["port"]
    return port is None or (int(port) <= 65535 and int(port) != DEFAULT_PORTS[match["scheme"]])


def normalize(url: str) -> str | None:
    """Return the one spelling of an absolute http(s) URL, or None if it is not one.

    RFC 3986's normalisations (section 6.2.2), in full: lower-cases the scheme and host,
    decodes escapes of unreserved characters ("%7E" is "~") and upper-cases the hex digits
    of the others ("%2f" is "%2F"), and resolves dot segments; then drops the default
    port and the fragment, turns an empty path into "/" and quotes characters that may
    not appear raw (spaces, non-ASCII).  Anything unparsable gives None, never an
    error, and so does a host that DNS cannot hold: longer than :data:`MAX_HOST`
    characters, a label longer than :data:`MAX_LABEL`, or a character no host name has
    (a backslash, a space).
    """
    match = _CLEAN.fullmatch(url)
    if match is not None and _as_is(match):
        return url[: match.end("target")]
    return _normalize(url)


def _normalize(url: str) -> str | None:
    """normalize() for any string: the general path, through urllib.parse."""
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES or not parts.hostname:
            return None
        host = parts.hostname  # already lower case, brackets of IPv6 removed
        port = parts.port  # raises ValueError for a non-numeric or out-of-range port
        if len(host) > MAX_HOST:
            return None
        if ":" in host:  # an IPv6 address, which urlsplit checked
            host = f"[{host}]"
        else:
            host = unquote(host, errors="strict").lower()  # "%41" is "a" in a host, too
            if not host.isascii():
                host = host.encode("idna").decode("ascii")
            if not _valid_host(host):
                return None
    except (ValueError, UnicodeError):
        return None
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    # Escapes first, as "%2E" is "." and so may make a dot segment; then dot segments.
    path = _remove_dot_segments(_normal_escapes(parts.path) or "/")
    path = quote(path, safe=_SAFE_PATH)
    query = quote(_normal_escapes(parts.query), safe=_SAFE_QUERY)
    return urlunsplit((scheme, netloc, path, query, ""))


# Links that join to a clean base by concatenation: a path from the root ("/a/b"), a
# query ("?q=1"), or a relative path ("a/b", "b.html?x") whose first segment holds no
# ":" (or it would be a scheme) and does not begin with "." (a dot segment).  Paths
# with ";" are left out: urljoin() splits it off as "parameters" and drops a ";" that
# has none after it ("a;" gives "a").  Paths with "//" are left out of relative joins:
# urljoin() drops the empty segments of a relative path.
_JOIN_PATH = r"[A-Za-z0-9_.~!$&'()*+,=:@%/-]"
_FROM_ROOT = re.compile(
    rf"(?P<target>(?P<path>/(?!/){_JOIN_PATH}*)(?:\?{_QUERY_CLASS}+)?)(?:#.*)?", re.DOTALL
)
_QUERY_ONLY = re.compile(rf"(?P<target>\?{_QUERY_CLASS}+)(?:#.*)?", re.DOTALL)
_RELATIVE = re.compile(
    rf"(?P<target>(?P<path>[A-Za-z0-9_~!$&'()*+,=@%-][A-Za-z0-9_.~!$&'()*+,=@%-]*"
    rf"(?:/{_JOIN_PATH}*)?)(?:\?{_QUERY_CLASS}+)?)(?:#.*)?",
    re.DOTALL,
)


def _joins_as_is(match: re.Match[str]) -> bool:
    """Tell whether a link that a join pattern matched needs no escape respelled."""
    return _escapes_are_normal(match["target"])


class BaseUrl:
    """The URL a page's links are relative to, ready to join many links to it.

    ``BaseUrl(base).join(link)`` is ``normalize(urljoin(base, link.strip()))``, None
    where that raises, for a fraction of the cost: the base is taken apart once per
    page, and a link of a common shape joins by concatenation.
    """

    __slots__ = ("_directory", "_document", "_origin", "_path", "url")

    def __init__(self, url: str) -> None:
        """Take the base apart, if it is clean enough for links to join by concatenation."""
        self.url = url
        # None: every link takes the general path (a base that is not in normal form,
        # or has ";" in its path, which urljoin() would treat as parameters).
        self._origin: str | None = None
        match = _CLEAN.fullmatch(url)
        if match is None or not _as_is(match) or ";" in match["path"]:
            return
        self._origin = url[: match.start("path")]  # "http://host:port"
        self._path = url[: match.end("path")]  # the base less its query and fragment
        self._document = url[: match.end("target")]  # the base less its fragment
        # Relative paths replace the base's last segment.  None when the path has "//",
        # whose empty segment urljoin() would drop.
        self._directory = (
            None if "//" in match["path"] else self._path[: self._path.rindex("/") + 1]
        )

    def join(self, link: str) -> str | None:
        """Return the normalised absolute URL a link on the page points to, or None."""
        link = link.strip()
        if self._origin is not None:
            first = link[:1]
            if first == "/":
                match = _FROM_ROOT.fullmatch(link)
                if match is not None and _joins_as_is(match) and "/." not in match["path"]:
                    return self._origin + link[: match.end("target")]
            elif first in ("", "#"):
                return self._document  # the page itself ("#top"), with its query
            elif first == "?":
                match = _QUERY_ONLY.fullmatch(link)
                if match is not None and _joins_as_is(match):
                    return self._path + link[: match.end("target")]
            elif link.startswith(("http://", "https://")):
                match = _CLEAN.fullmatch(link)
                if match is not None and _as_is(match) and ";" not in match["path"]:
                    return link[: match.end("target")]
            elif self._directory is not None:
                match = _RELATIVE.fullmatch(link)
                if (
                    match is not None
                    and _joins_as_is(match)
                    and "/." not in match["path"]
                    and "//" not in match["path"]
                ):
                    return self._directory + link[: match.end("target")]
        try:
            if _NO_HOST.match(link):
                # "http:///x" has an authority, and it is empty: RFC 9110 (4.2.1) says to
                # reject it, where urljoin() would lend it the page's host.
                return None
            return normalize(urljoin(self.url, link))
        except ValueError:  # e.g. "http://[::1" is not a URL at all
            return None


#: A link to http or https whose authority is empty ("http:///x").
_NO_HOST = re.compile(r"(?i)https?:///")


def resolve(base: str, link: str) -> str | None:
    """Return the normalised absolute URL of a link relative to base, or None.

    For one link; to join many to one base, make a :class:`BaseUrl` once.
    """
    return BaseUrl(base).join(link)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def lenient_host(host: str) -> str:
    """Return the last two labels of a host name: "www.example.com" -> "example.com"."""
    return ".".join(host.split(".")[-2:])


# The host of an http(s) URL as normalize() spells it: what urlsplit().hostname gives.
_HOST = re.compile(r"https?://([a-z0-9.-]+)(?::[0-9]*)?/")


def host_name(url: str) -> str:
    """Return the host name of an http(s) URL, lower case, or "" if it has none.

    Quick for a normalised URL, whose host sits between "://" and the port or the path
    (the crawlers ask for it several times per page); anything else is left to urlsplit().
    """
    match = _HOST.match(url)
    return match[1] if match is not None else (urlsplit(url).hostname or "")


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
        # host -> host_allowed(host): a crawl meets few hosts and asks about each often.
        self._hosts: dict[str, bool] = {}

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
        # A normalised URL's host sits between "://" and the port or the path; anything
        # else (user names, IPv6 brackets, upper case) is left to urlsplit().
        match = _HOST.match(url)
        if match is not None:
            host = match[1]
        else:
            parts = urlsplit(url)
            if parts.scheme not in SCHEMES or not parts.hostname:
                return False
            host = parts.hostname
        known = self._hosts.get(host)
        if known is None:
            known = self._hosts[host] = self.host_allowed(host)
        return known
