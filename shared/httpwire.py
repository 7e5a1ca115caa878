"""HTTP/1.1 for the client side, without any I/O: request bytes out, response bytes in.

Stages 1 and 2 own their non-blocking sockets and must not block, so this module never
touches a socket.  A crawler sends :func:`request_bytes`, feeds whatever ``recv()``
returns to a :class:`ResponseParser`, and stops reading as soon as ``feed`` says the
response is complete.  Keeping the protocol apart from the I/O is what lets a callback
crawler and a generator crawler share it, and lets the tests drive it with plain bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from shared import USER_AGENT
from shared.responses import MAX_BODY, Response
from shared.urls import DEFAULT_PORTS

#: A header block longer than this is refused: a real server never needs it, and
#: without a cap a hostile peer could make us buffer forever.
MAX_HEAD = 64 * 1024
#: The same idea for a chunk-size line.
MAX_LINE = 1024
#: aiohttp's limits (stage 3), so that every stage refuses the same heads: the status
#: line and each field (name and value) at most 8190 bytes, at most 128 fields.
MAX_FIELD = 8190
MAX_FIELDS = 128

# The blank line that ends the header block; bare LF is tolerated as well as CRLF.
_HEAD_END = re.compile(rb"\r?\n\r?\n")
# HTTP/1.0 and 1.1 only, as aiohttp (stage 3) reads them; a status from 100 to 999.
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([1-9]\d\d)(?: .*)?")
# A field name is a token (RFC 9110, section 5.6.2): no space before the colon, no "(".
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
# A chunk-size line: hex digits (stricter than int(x, 16), which allows "0x", "+" and
# "_"), then the extensions we ignore, which hold no control byte but a tab.
_CHUNK_SIZE = re.compile(rb"([0-9a-fA-F]{1,16})[ \t]*(?:;[^\x00-\x08\x0a-\x1f\x7f]*)?")
_DIGITS = re.compile(r"[0-9]+")


class WireError(Exception):
    """The peer sent something that is not a valid, complete HTTP response."""


#: What one try over a hand-made connection (stages 1 and 2) can fail with: refused,
#: reset, unknown host, a TLS failure, the timeout (all OSError), and a response that is
#: not valid HTTP or ends too soon (WireError).  Stage 3 has aiohttp's own errors.
NETWORK_ERRORS = (OSError, WireError)


_NORMALISED = re.compile(r"(?P<scheme>https?)://(?P<host>[a-z0-9.-]+)(?::(?P<port>[1-9][0-9]*))?/")


def address(url: str) -> tuple[str, int]:
    """Return the (host, port) to connect to for an http(s) URL.

    Default ports are 80 and 443; IPv6 brackets are stripped.  Raises ValueError for
    anything that is not an absolute http(s) URL.
    """
    # Quick for a normalised URL (asked twice per try); anything else is left to urlsplit().
    match = _NORMALISED.match(url)
    if match is not None and int(match["port"] or 0) <= 65535:
        return match["host"], int(match["port"] or DEFAULT_PORTS[match["scheme"]])
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    port = parts.port  # raises ValueError for a bad port
    return parts.hostname, DEFAULT_PORTS[parts.scheme] if port is None else port


def request_bytes(url: str, user_agent: str = USER_AGENT) -> bytes:
    """Return the GET request for an absolute, already-normalised http(s) URL.

    The request target is the path (plus "?" and the query), the Host header carries
    the port only when it is not the default one, and ``Connection: close`` lets the
    end of the connection mark the end of a body with no length.  The URL must be
    ASCII (it is percent-quoted already); otherwise UnicodeEncodeError is raised.
    """
    host, port = address(url)
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal needs its brackets back in the Host header
    if port != DEFAULT_PORTS[parts.scheme]:
        host = f"{host}:{port}"
    if any(c in user_agent for c in "\r\n"):
        raise ValueError("line break in the User-Agent would forge extra headers")
    lines = [
        f"GET {target} HTTP/1.1",
        f"Host: {host}",
        f"User-Agent: {user_agent}",
        "Accept: */*",
        "Accept-Encoding: identity",  # we have no decompressor, so ask for none
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def header_text(raw: bytes) -> str:
    """Decode a header value as aiohttp (stage 3) does: UTF-8, as browsers read Location.

    A byte that is not part of valid UTF-8 is kept as a lone surrogate (U+DC80 + byte),
    so nothing is lost: :func:`shared.responses.redirect_target` percent-encodes it back
    to the byte it was (``caf\\xe9`` -> ``caf%E9``).
    """
    return raw.decode("utf-8", "surrogateescape")


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """Parse a status line and header lines into the status and lower-cased headers.

    A repeated header's values are joined with ", ", as HTTP allows for list headers.
    Only spaces and tabs are trimmed around a value (RFC 9110, section 5.5): bytes such
    as 0xA0 are part of it.  NUL and a CR that ends no line are refused, not kept.
    """
    status_line, *lines = [line.removesuffix(b"\r") for line in head.split(b"\n")]
    for line in (status_line, *lines):
        if b"\0" in line or b"\r" in line:
            raise WireError(f"NUL or bare CR in the header block: {line[:40]!r}")
    match = _STATUS_LINE.fullmatch(status_line)
    if match is None or len(status_line) > MAX_FIELD:
        raise WireError(f"not an HTTP/1.x status line: {status_line[:40]!r}")
    # [name, value, its folded lines] for each field, in order; joined once at the end, as
    # adding each folded line to the value would copy it again and again.
    fields: list[tuple[bytes, bytes, list[bytes]]] = []
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            # obs-fold (RFC 9112, section 5.2): the line goes on with the field before it.
            # The line break goes and its whitespace stays, as aiohttp does.
            if not fields:  # nothing to continue: refused, as section 2.2 allows
                raise WireError(f"folded line before any header: {line[:40]!r}")
            fields[-1][2].append(line)
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise WireError(f"malformed header line: {line[:40]!r}")
        fields.append((name, value, []))
    if len(fields) > MAX_FIELDS:
        raise WireError(f"more than {MAX_FIELDS} header fields")
    joined = (b"".join([value, *folded]).strip(b" \t") for _, value, folded in fields)
    return int(match.group(1)), _joined(zip((name for name, _, _ in fields), joined, strict=True))


def _joined(fields: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-case names -> decoded values, a repeated field's values joined with ", ".

    Each field is a name and its value with the spaces and tabs around it trimmed; the
    two together may be MAX_FIELD bytes long.
    """
    headers: dict[str, str] = {}
    for name, value in fields:
        if not _TOKEN.fullmatch(name):
            raise WireError(f"malformed header name: {name[:40]!r}")
        if len(name) + len(value) > MAX_FIELD:
            raise WireError(f"header field longer than {MAX_FIELD} bytes: {name[:40]!r}")
        key, text = name.decode("ascii").lower(), header_text(value)
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


def checked_head(
    version: tuple[int, int] | None, status: int, reason: str, fields: Iterable[tuple[bytes, bytes]]
) -> dict[str, str]:
    """Check a head that another parser read (stage 3's aiohttp) as _parse_head checks one.

    Returns its headers as _parse_head makes them: names in lower case, values decoded
    by :func:`header_text`, a repeated field's values joined with ", ".  Raises WireError
    for what stages 1 and 2 refuse and aiohttp lets through: another HTTP version, a
    status below 100, a 101 nobody asked for, NUL or CR in the reason, a line too long,
    a head longer than MAX_HEAD.
    """
    status_line = f"HTTP/1.1 {status} {reason}".encode("utf-8", "surrogateescape")
    fields = list(fields)
    # aiohttp has no cap on the whole head: counted here as a server writes it, each field
    # "Name: value" and CRLF (the spaces aiohttp trimmed from values are not known).
    if len(status_line) + sum(len(name) + len(value) + 4 for name, value in fields) > MAX_HEAD:
        raise WireError(f"header block longer than {MAX_HEAD} bytes")
    if version not in ((1, 0), (1, 1)) or not 100 <= status <= 999 or status == 101:
        shown = ".".join(map(str, version or ()))
        raise WireError(f"not HTTP/1.0 or 1.1, a status from 100 to 999 but 101: {shown} {status}")
    if b"\0" in status_line or b"\r" in status_line or len(status_line) > MAX_FIELD:
        raise WireError(f"not an HTTP/1.x status line: {status_line[:40]!r}")
    return _joined(fields)  # aiohttp trimmed each value already, as _parse_head does


def _content_length(value: str) -> str:
    """Return the one Content-Length a field value gives; WireError if it gives no one length.

    A value is decimal digits (no sign, no odd space), below 2**64 as in aiohttp.  A list
    of the same value, as two fields or one field ``5, 5`` (which :func:`_parse_head` makes
    of two), is that value: RFC 9112, section 6.3.  A list of different values, or with an
    empty element, is an error, as h11 reads it.  aiohttp refuses any list (REAL_WEB.md).
    """
    values = {item.strip(" \t") for item in value.split(",")}
    if len(values) != 1:
        raise WireError(f"invalid Content-Length: different values in {value[:40]!r}")
    (one,) = values
    digits = one.lstrip("0") or "0"  # int() refuses strings of more than 4300 digits
    if not _DIGITS.fullmatch(one) or len(digits) > 20 or int(digits) >= 2**64:  # as aiohttp
        raise WireError(f"invalid Content-Length: {value[:40]!r}")
    return one


class ResponseParser:
    """Feed it the bytes as they arrive; it says when the response is complete.

    The parser is a small state machine.  ``_state`` names what it waits for:
    "head" (the header block), "length" (the rest of a Content-Length body), "close"
    (body bytes until the peer closes), "size", "data" and "crlf" (the parts of a
    chunk), and finally "done".  After a WireError the parser must be discarded.
    """

    # No __dict__ per parser: one waits in every fetch in flight (the benchmark's S3).
    __slots__ = (
        "_body",
        "_buffer",
        "_headers",
        "_max_body",
        "_remaining",
        "_searched",
        "_state",
        "_status",
        "_too_large",
    )

    # Set when the head has arrived (_read_head, _start_body), not before: a parser waits in
    # every fetch in flight, most of them for their first byte, and empty ones cost memory.
    _headers: dict[str, str]
    _body: bytearray  # grows in place: no O(n^2) re-joining of pieces

    def __init__(self, max_body: int = MAX_BODY) -> None:
        """Make a parser that gives up on bodies longer than ``max_body`` bytes."""
        self._max_body = max_body
        self._buffer = bytearray()  # received but not yet consumed
        self._searched = 0  # bytes of the buffer already searched for the end of the head
        self._state = "head"
        self._status = 0
        self._remaining = 0  # bytes left of the Content-Length body or of the current chunk
        self._too_large = False

    @property
    def done(self) -> bool:
        """True once the whole response (or as much as we want of it) has arrived."""
        return self._state == "done"

    def feed(self, data: bytes) -> bool:
        """Take newly received bytes; return True once the response is complete.

        Raises WireError on a malformed status line, header or chunk framing.  Data
        fed after completion is ignored.
        """
        if not self.done:
            self._buffer += data
            self._advance()
        if self.done:
            self._buffer.clear()  # anything after the response is of no use to us
        return self.done

    def receive(self, chunk: bytes) -> bool:
        """Take what one recv() returned; return True once the response is complete.

        Bytes are fed; an empty chunk is how recv() says the peer closed: the end of a
        body without a length, or a response cut short (WireError, as feed_eof says).
        """
        return self.feed(chunk) if chunk else self.feed_eof()

    def feed_eof(self) -> bool:
        """Tell the parser the peer closed the connection; return True if complete.

        Closing is how a body without Content-Length or chunking ends.  Anywhere else it
        means the response was cut short, and WireError is raised.
        """
        if self._state == "close":
            self._state = "done"
        if self.done:
            return True
        if self._state == "head":
            missing = "headers incomplete" if self._buffer else "nothing received"
        elif self._state == "length":
            missing = f"{self._remaining} bytes of the body missing"
        else:
            missing = "chunked body unfinished"
        raise WireError(f"connection closed before the response was complete: {missing}")

    def response(self) -> Response:
        """Return the complete response; RuntimeError if it has not all arrived yet."""
        if not self.done:
            raise RuntimeError("the response is not complete yet")
        return Response(
            status=self._status,
            headers=dict(self._headers),
            body=bytes(self._body),
            too_large=self._too_large,
        )

    def _advance(self) -> None:
        """Run the steps for the current state until one needs bytes we do not have."""
        steps = {
            "head": self._read_head,
            "length": self._read_body,
            "close": self._read_body,
            "data": self._read_body,
            "size": self._read_chunk_size,
            "crlf": self._read_chunk_end,
        }
        while not self.done and steps[self._state]():
            pass

    def _read_head(self) -> bool:
        """Parse the header block once its blank line has arrived, and pick the framing."""
        # A peer that is not speaking HTTP is caught at once, not after 64 KiB or a timeout.
        if not b"HTTP/".startswith(self._buffer[:5]):
            raise WireError(f"not an HTTP/1.x status line: {bytes(self._buffer[:40])!r}")
        # Only new bytes are searched (3 bytes back, in case the blank line was split).
        end = _HEAD_END.search(self._buffer, max(0, self._searched - 3), MAX_HEAD + 4)
        if end is None:
            if len(self._buffer) >= MAX_HEAD + 4:
                raise WireError(f"header block longer than {MAX_HEAD} bytes")
            self._searched = len(self._buffer)
            return False
        self._status, self._headers = _parse_head(bytes(self._buffer[: end.start()]))
        del self._buffer[: end.end()]
        self._searched = 0
        self._start_body()
        return True

    def _start_body(self) -> None:
        """Choose how the body is framed (RFC 9112, section 6.3) from status and headers."""
        self._body = bytearray()  # made here, not in __init__: see the class's annotations
        headers = self._headers
        if self._status == 101:  # a switch to another protocol, which no request of ours asks for
            raise WireError("101 Switching Protocols, but the request asked for no upgrade")
        if "content-length" in headers:  # read whatever the status, as h11 and aiohttp do
            # A list of one value repeated is that value, in the response too, as h11 has it.
            headers["content-length"] = _content_length(headers["content-length"])
        if self._status < 200:
            self._state = "head"  # an interim response, such as 100 Continue: the real one follows
        elif self._status in (204, 304):
            self._state = "done"  # these never have a body
        elif "transfer-encoding" in headers:
            if "content-length" in headers:  # a smuggler's trick (RFC 9112, section 6.3)
                raise WireError("both Transfer-Encoding and Content-Length")
            # Chunked must be the last coding; otherwise the body runs until the close.
            last = headers["transfer-encoding"].rsplit(",", 1)[-1].strip(" \t").lower()
            self._state = "size" if last == "chunked" else "close"
        elif "content-length" in headers:
            self._remaining = int(headers["content-length"])
            if self._remaining > self._max_body:
                self._give_up()  # no point waiting for bytes we would throw away
            else:
                self._state = "length" if self._remaining else "done"
        else:
            self._state = "close"

    def _read_body(self) -> bool:
        """Move body bytes from the buffer: all of them, or up to the end of the length or chunk."""
        if not self._buffer:
            return False
        if self._state == "close":
            take = len(self._buffer)
            if len(self._body) + take > self._max_body:
                return self._give_up()
        else:
            take = min(self._remaining, len(self._buffer))
            self._remaining -= take
            if self._remaining == 0:
                self._state = "crlf" if self._state == "data" else "done"
        self._body += self._buffer[:take]
        del self._buffer[:take]  # cheap: CPython drops bytes from a bytearray's front in place
        return True

    def _read_chunk_size(self) -> bool:
        """Read a chunk-size line ("1a;ext=1"); a zero size ends the body."""
        line = self._read_line()
        if line is None:
            return False
        match = _CHUNK_SIZE.fullmatch(line)
        if match is None:
            raise WireError(f"invalid chunk size line: {line[:40]!r}")
        size = int(match.group(1), 16)
        if size == 0:
            # Trailers may follow the last chunk, but we asked for Connection: close and
            # ignore trailers, so there is nothing left worth waiting for.
            self._state = "done"
        elif len(self._body) + size > self._max_body:
            self._give_up()
        else:
            self._remaining, self._state = size, "data"
        return True

    def _read_chunk_end(self) -> bool:
        """Read the line break that must follow a chunk's data."""
        line = self._read_line()
        if line is None:
            return False
        if line:
            raise WireError(f"chunk data longer than its size: {line[:40]!r}")
        self._state = "size"
        return True

    def _read_line(self) -> bytes | None:
        """Take one line, without its CRLF or LF, off the buffer; None until it has all arrived."""
        end = self._buffer.find(b"\n", 0, MAX_LINE)
        if end < 0:
            if len(self._buffer) >= MAX_LINE:
                raise WireError(f"chunk framing line longer than {MAX_LINE} bytes")
            return None
        line = bytes(self._buffer[:end]).rstrip(b"\r")
        del self._buffer[: end + 1]
        return line

    def _give_up(self) -> bool:
        """Mark the body too large: complete, with an empty body, so the caller hangs up."""
        self._too_large = True
        self._body = bytearray()
        self._state = "done"
        return True
