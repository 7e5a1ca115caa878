"""The hostile catalogue, wire half: responses odd byte by byte (``Site(wire=True)``).

Each case in :func:`wire_cases` is a response written to the socket exactly as given,
after which the server closes the connection.  Beside its bytes stands what a correct
reading of them means, a :class:`Resource` (status, type, redirect target, links) from
which the oracle predicts the record.  Bytes and meaning sit side by side here, so the
reason for each record can be read next to it.

Stages 1 and 2 read the wire with shared/httpwire.py, stage 3 with aiohttp.  The two
readings agree on every case except those with a ``stage3`` meaning of their own, whose
``why`` says what aiohttp does and why we let it (shared/REAL_WEB.md says the same for
the real web).  ``Site.expected(..., stage=...)`` gives each stage its records.

The hub, ``/wire/``, is linked from the root and links to every case.  Each redirect
case is linked from the hub alone (the oracle's invariant, see oracle.py); its target
is a small page under ``/wire/land/``.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import cache

from shared.testsite.pages import HTML, NEVER, Resource, html_page

#: The kind of a case that is a response: the server writes the Resource's ``body`` as
#: the whole response, status line and all, then closes the connection.
WIRE = "wire"
#: The same, for bytes that no stage may take as a response: every try fails.
WIRE_ERROR = "wire-error"
#: The same, for a response whose body passes the crawlers' 10 MiB cap: too large.
WIRE_HUGE = "wire-huge"
#: Not bytes but a page that answers 403, or 200 to a request carrying the cookie
#: :data:`COOKIE` (server.py): a crawler that sends cookies back sees another page.
COOKIE_GATE = "cookie-gate"
COOKIE = b"gate=open"

#: Where the catalogue starts; the root links here with ``Site(wire=True)``.
WIRE_HUB = "/wire/"

#: What the gzip bomb inflates to: more than the crawlers' 10 MiB cap.
BOMB_SIZE = 16 * 1024 * 1024

STAGE3 = "stage3_asyncio"


@dataclass(frozen=True)
class WireCase:
    """One odd response: what it means, and what it means to stage 3 where that differs.

    ``meaning.body`` holds the bytes on the wire.  ``meaning.kind`` is WIRE for a
    response and WIRE_ERROR when every try must fail.  ``stage3``, when given, is stage
    3's record instead, for the reason ``why``.
    """

    meaning: Resource
    stage3: Resource | None = None
    why: str = ""


def response(status: str, fields: list[bytes], body: bytes = b"", length: bool = True) -> bytes:
    """The bytes of a response: status line, fields, and a true Content-Length unless told not.

    Every one says ``Connection: close``, as the server closes after it: a keep-alive
    pool (stage 3's) must not try to reuse the connection.
    """
    fields = [*fields, b"Connection: close"]
    if length:
        fields.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join([b"HTTP/1.1 " + status.encode(), *fields, b"", body])


def body(title: str, hrefs: tuple[str, ...], after: str = "") -> bytes:
    """A small HTML page linking to ``hrefs``; ``after`` comes after its last link."""
    links = "".join(f'<p><a href="{href}">{href}</a></p>\n' for href in hrefs)
    return (
        f"<html><head><title>{title}</title></head><body>\n{links}{after}</body></html>\n".encode()
    )


def page(raw: bytes, links: tuple[str, ...] = (WIRE_HUB,), content_type: str = HTML) -> WireCase:
    """A case that means a 200 page, parsed, with these canonical links."""
    return WireCase(Resource(kind=WIRE, body=raw, links=links, content_type=content_type))


def moved(location: bytes, target: str | None) -> WireCase:
    """A case that means a 302 to ``target`` (None: the Location makes no URL)."""
    raw = response("302 Found", [b"Location: " + location, FIELD_HTML])
    return WireCase(Resource(kind=WIRE, status=302, body=raw, target=target))


def broken(raw: bytes) -> WireCase:
    """A case that is no valid response: every try fails, in every stage."""
    return WireCase(Resource(kind=WIRE_ERROR, body=raw, content_type=None))


def length_list(raw: bytes) -> WireCase:
    """A case with a Content-Length list of one value: a page with no link, but in stage 3."""
    return WireCase(
        Resource(kind=WIRE, body=raw, links=()),
        stage3=Resource(kind=WIRE_ERROR, content_type=None),
        why="aiohttp refuses any Content-Length list and any repeat, even of one value, "
        "which RFC 9112 reads as that value; its parser answers before we see the head",
    )


def head_of(size: int) -> bytes:
    """A 200 page whose head, up to its blank line, is ``size`` bytes: fields of padding."""
    bare = response("200 OK", [FIELD_HTML], HUB_PAGE)
    missing = size - bare.index(b"\r\n\r\n")
    count = -(-missing // 8000)  # each field well under the 8190 bytes a field may have
    lengths = [missing // count] * count
    lengths[0] += missing % count
    # Each "X-Pad-NN: " field and its CRLF is 12 bytes more than its value.
    pads = [b"X-Pad-%02d: " % i + b"v" * (n - 12) for i, n in enumerate(lengths)]
    return response("200 OK", [FIELD_HTML, *pads], HUB_PAGE)


def chunked_as(eol: bytes) -> bytes:
    """HUB_PAGE as one chunk and the last chunk, each chunk-size line ended by ``eol``."""
    return b"%x%s%s\r\n0%s\r\n" % (len(HUB_PAGE), eol, HUB_PAGE, eol)


def stage3_refuses(raw: bytes, why: str) -> WireCase:
    """A page, whose framing the parser of aiohttp's wheels (llhttp) refuses: an error."""
    meaning = Resource(kind=WIRE, body=raw, links=(WIRE_HUB,))
    return WireCase(meaning, Resource(kind=WIRE_ERROR, content_type=None), why)


@cache
def gzip_bomb() -> bytes:
    """A gzip stream of BOMB_SIZE spaces: about 16 KB on the wire."""
    return gzip.compress(b" " * BOMB_SIZE, mtime=0)


FIELD_HTML = b"Content-Type: " + HTML.encode()
CHUNKED = b"Transfer-Encoding: chunked"
#: The body of most page cases: one link, back to the hub.
HUB_PAGE = body("Wire case", (WIRE_HUB,))
#: Redirect targets and the pages linked from cases: plain pages.
LANDINGS = (
    "/wire/land/with%20space/%C3%BC",
    "/wire/land/caf%E9",
    "/wire/land/%20folded",
    "/wire/land/after-fold",
    "/wire/land/chunked",
    "/wire/land/a,%20/wire/land/b",
)
#: A link whose host holds a backslash: no URL (RFC 3986's reg-name has none), so no
#: record, in every stage and in either scope.  Browsers read the backslash as a "/" (the
#: WHATWG URL standard); a crawler that reads RFC 3986 does not guess.  Its host is a name,
#: so that tests/test_crawl.py can crawl the case with --lenient from a root on that name.
BACKSLASH_HOST = "backslash.test"
BACKSLASH_LINK = f"http://a\\b.{BACKSLASH_HOST}/wire/land/never"
#: The page behind the cookie, linked only from the case that sets the cookie, so that a
#: crawler fetches it after it was given the cookie.
COOKIE_GATED = "/wire/land/cookie-gated"
#: The longest status line, and the longest field (name and value, without the colon and
#: the spaces or tabs around the value) that every stage takes.
LIMIT = 8190
#: The longest head (status line and fields, up to the blank line) that every stage takes.
HEAD_LIMIT = 64 * 1024


@cache
def wire_cases() -> dict[str, WireCase]:
    """Path -> case: the whole catalogue, in the order the hub lists it."""
    fold_body = body("Folded", ("/wire/land/after-fold",))
    chunked = body("Chunked", ("/wire/land/chunked",))
    lie = body("A lie", (), f'<p><a href="{NEVER}after-the-length">cut off</a></p>\n')
    cut = lie.index(b"<p><a")
    bomb = gzip_bomb()
    cases = {
        # Location: UTF-8, as aiohttp and browsers read it; a byte that is not UTF-8
        # percent-encoded as it is; an obs-fold read as a space; no URL at all.
        "location-utf8": moved(b"/wire/land/with space/\xc3\xbc", LANDINGS[0]),
        "location-latin1": moved(b"/wire/land/caf\xe9", LANDINGS[1]),
        "location-folded": moved(b"/wire/land/\r\n folded", LANDINGS[2]),
        "location-garbage": moved(b"http://[::1/wire/land/never", None),
        # obs-fold: the folded line continues the field before it, even with a colon in
        # it, so this body has no Content-Length and runs to the close.
        "fold": page(response("200 OK", [FIELD_HTML, b"X-Note: a\r\n\tb c"], HUB_PAGE)),
        "fold-colon": page(
            response("200 OK", [FIELD_HTML, b"X-Note: a\r\n Content-Length: 10"], fold_body, False),
            ("/wire/land/after-fold",),
        ),
        # Control bytes: NUL and a bare CR are errors; the others, 0x85 and 0xA0 are
        # kept in the value (and never trimmed), and the page reads as any other.
        "nul": broken(response("302 Found", [b"Location: /wire/land/a\x00b"])),
        "bare-cr": broken(response("302 Found", [b"Location: /wire/land/a\rb"])),
        "controls": page(
            response("200 OK", [FIELD_HTML, b"X-Junk: \x01\x1f\x7f\x85\xa0"], HUB_PAGE)
        ),
        # Framing headers a strict parser refuses.
        "length-nbsp": broken(
            response("200 OK", [FIELD_HTML, b"Content-Length: 5\xa0"], b"hello", False)
        ),
        "length-plus": broken(
            response("200 OK", [FIELD_HTML, b"Content-Length: +5"], b"hello", False)
        ),
        # A list (or a repeat) of one length is that length (RFC 9112, section 6.3).
        "length-list": length_list(
            response("200 OK", [FIELD_HTML, b"Content-Length: 5, 5"], b"hello", False)
        ),
        "length-twice": length_list(
            response("200 OK", [FIELD_HTML, b"Content-Length: 5"], b"hello")
        ),
        "length-and-chunked": broken(
            response(
                "200 OK", [FIELD_HTML, b"Transfer-Encoding: chunked"], b"5\r\nhello\r\n0\r\n\r\n"
            )
        ),
        # "chunked\xa0" is no chunked: the body runs to the close, chunk sizes and all.
        "chunked-nbsp": page(
            response(
                "200 OK",
                [FIELD_HTML, b"Transfer-Encoding: chunked\xa0"],
                b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked), chunked),
                False,
            ),
            ("/wire/land/chunked",),
        ),
        # A Content-Length that lies: more than is sent, then the close (every try fails),
        # or less than is sent.
        "length-longer": broken(
            response("200 OK", [FIELD_HTML, b"Content-Length: 5000"], lie, False)
        ),
        "length-shorter": WireCase(
            Resource(
                kind=WIRE,
                body=response("200 OK", [FIELD_HTML, b"Content-Length: %d" % cut], lie, False),
            ),
            stage3=Resource(kind=WIRE_ERROR, content_type=None),
            why="aiohttp reads the bytes after the response, which came in the same read: "
            "after a response that said Connection: close it fails the read ('Data after "
            "Connection: close'), on a kept-alive connection it reads them as the next "
            "response (a bad status line); stages 1 and 2 stop reading at the "
            "Content-Length, as the request said Connection: close",
        ),
        # A 204 has no body (RFC 9110, section 15.3.5), whatever follows its head: the
        # bytes after it are no part of it, and stages 1 and 2 never read them.
        "no-content-body": WireCase(
            Resource(
                kind=WIRE,
                status=204,
                body=response("204 No Content", [FIELD_HTML], HUB_PAGE, False),
            ),
            stage3=Resource(kind=WIRE_ERROR, content_type=None),
            why="aiohttp's parser (llhttp) reads the bytes after the head, which came in the "
            "same read, as data after a response that said Connection: close, and fails the "
            "whole read (400, 'Data after Connection: close') before the head reaches us; no "
            "setting of aiohttp's makes it stop at the end of the response",
        ),
        # Heads past aiohttp's limits, which every stage keeps.
        "many-fields": broken(
            response("200 OK", [FIELD_HTML, *(b"X-F%d: v" % i for i in range(200))], HUB_PAGE)
        ),
        "long-field": broken(response("200 OK", [FIELD_HTML, b"X-Long: " + b"v" * 9000], HUB_PAGE)),
        "bad-name": broken(response("200 OK", [FIELD_HTML, b"X Note: a"], HUB_PAGE)),
        # Bytes that are not UTF-8 in a type and a charset: recorded, never a crash.
        "charset-latin1": page(
            response("200 OK", [b"Content-Type: text/html; charset=caf\xe9"], HUB_PAGE)
        ),
        "type-latin1": page(
            response("200 OK", [b"Content-Type: text/ht\xe9ml"], HUB_PAGE), (), "text/ht\ufffdml"
        ),
        # gzip that was never asked for: every stage asked for identity and reads the
        # compressed bytes as the page they claim to be (no link in them).
        "gzip-bomb": page(response("200 OK", [FIELD_HTML, b"Content-Encoding: gzip"], bomb), ()),
        # A coding none of the stages asked for, nor can decode: the bytes are the page.
        "brotli": page(
            response("200 OK", [FIELD_HTML, b"Content-Encoding: br"], b"\x1b\x03\x00\xf8<p>"), ()
        ),
        # Chunked framing past the limits: a chunk larger than the 10 MiB cap (too large at
        # once), a chunk-size line of a megabyte (the 1,024 bytes a framing line may have),
        # and a last chunk after which trailers come without end (the body is all there).
        "chunk-huge": WireCase(
            Resource(
                kind=WIRE_HUGE,
                body=response("200 OK", [FIELD_HTML, CHUNKED], b"ffffffffffffffff\r\n<p>", False),
            ),
            stage3=Resource(kind=WIRE_ERROR, content_type=None),
            why="aiohttp tells no one a chunk's size: stage 3 waits for the chunk's data, and "
            "the server's close makes each try an error (a server that stays open, a timeout); "
            "stages 1 and 2 see the size pass the 10 MiB cap and stop at once, as they do for "
            "a Content-Length past it",
        ),
        "chunk-extension": WireCase(
            Resource(
                kind=WIRE_ERROR,
                body=response(
                    "200 OK",
                    [FIELD_HTML, CHUNKED],
                    b"5;" + b"x" * 2**20 + b"\r\nhello\r\n0\r\n\r\n",
                    False,
                ),
                content_type=None,
            ),
            stage3=Resource(kind=WIRE),
            why="aiohttp's parser, the one its wheels bring (llhttp, in C), skips a chunk "
            "extension of any length, and no setting of aiohttp's bounds it: stage 3 reads the "
            "page; stages 1 and 2 refuse a framing line past 1,024 bytes",
        ),
        "trailers-endless": WireCase(
            Resource(
                kind=WIRE,
                body=response(
                    "200 OK",
                    [FIELD_HTML, CHUNKED],
                    b"%x\r\n%s\r\n0\r\n" % (len(HUB_PAGE), HUB_PAGE)
                    + b"".join(b"X-Trailer-%d: t\r\n" % i for i in range(1000)),
                    False,
                ),
                links=(WIRE_HUB,),
            ),
            stage3=Resource(kind=WIRE_ERROR, content_type=None),
            why="aiohttp ends the body only after the trailers, which it reads as a head: past "
            "128 fields each try fails ('Too many headers received'), and nothing public shows "
            "the last chunk before that; stages 1 and 2 stop at the last chunk, as they ignore "
            "trailers",
        ),
        # Chunked framing that RFC 9112 allows, or tolerates, and llhttp refuses.
        "chunk-extension-spaces": stage3_refuses(
            response("200 OK", [FIELD_HTML, CHUNKED], chunked_as(b" ; a = b\r\n"), False),
            "llhttp refuses a space or tab around a chunk extension's ';' and '=' (the BWS "
            "of RFC 9112, section 7.1.1) and no setting of aiohttp's allows it: each try "
            "fails ('Invalid character in chunk extensions'); stages 1 and 2 read the page",
        ),
        "chunked-bare-lf": stage3_refuses(
            response("200 OK", [FIELD_HTML, CHUNKED], chunked_as(b"\n"), False),
            "llhttp refuses a bare LF ending a chunk-size line ('Expected LF after chunk "
            "size'), which RFC 9112 (section 2.2) lets a recipient take as a line's end, as "
            "stages 1 and 2 do for every line of the head and the framing",
        ),
        "chunk-last-unended": stage3_refuses(
            response("200 OK", [FIELD_HTML, CHUNKED], chunked_as(b"\r\n")[:-2], False),
            "after the last chunk, stages 1 and 2 stop (the body is all there, the request "
            "said Connection: close); llhttp waits for the CRLF that ends the trailers, "
            "and the server's close makes each try an error (a server that stays open, "
            "a timeout)",
        ),
        # The whole head at its cap, and one byte past it (aiohttp has none: checked_head).
        "head-at-limit": page(head_of(HEAD_LIMIT)),
        "head-past-limit": broken(head_of(HEAD_LIMIT + 1)),
        # The status line: a NUL in the reason phrase; an HTTP version other than 1.0 and
        # 1.1; a status below 100; a 101 Switching Protocols nobody asked for, then a 200.
        "reason-nul": broken(response("200 O\x00K", [FIELD_HTML], HUB_PAGE)),
        "http-1.2": broken(b"HTTP/1.2" + response("200 OK", [FIELD_HTML], HUB_PAGE)[8:]),
        "http-2.0": broken(b"HTTP/2.0" + response("200 OK", [FIELD_HTML], HUB_PAGE)[8:]),
        "status-099": broken(response("099 Early", [FIELD_HTML], HUB_PAGE)),
        "switching-unasked": broken(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"
            + response("200 OK", [FIELD_HTML], HUB_PAGE)
        ),
        # The limits at their boundary: a status line and a field of LIMIT bytes, and of one more.
        "status-at-limit": page(response("200 " + "R" * (LIMIT - 13), [FIELD_HTML], HUB_PAGE)),
        "status-past-limit": broken(response("200 " + "R" * (LIMIT - 12), [FIELD_HTML], HUB_PAGE)),
        "field-at-limit": page(
            response("200 OK", [FIELD_HTML, b"X-Long: " + b"v" * (LIMIT - 6)], HUB_PAGE)
        ),
        "field-past-limit": broken(
            response("200 OK", [FIELD_HTML, b"X-Long: " + b"v" * (LIMIT - 5)], HUB_PAGE)
        ),
        # A field given twice is one field, its values joined with ", " (RFC 9110, section
        # 5.3), whatever field it is: two Locations make one odd target, two types one odd type.
        "location-twice": WireCase(
            Resource(
                kind=WIRE,
                status=302,
                body=response(
                    "302 Found", [b"Location: /wire/land/a", b"Location: /wire/land/b", FIELD_HTML]
                ),
                target=LANDINGS[5],
            )
        ),
        "type-twice": page(
            response("200 OK", [b"Content-Type: text/plain", FIELD_HTML], HUB_PAGE),
            (),
            "text/plain, " + HTML,
        ),
        # A link that is no URL: its host holds a backslash (see BACKSLASH_LINK).
        "host-backslash": page(
            response("200 OK", [FIELD_HTML], body("A backslash", (BACKSLASH_LINK, WIRE_HUB)))
        ),
        # A cookie: no stage keeps it, so the page behind it answers 403 in every stage.
        "cookie": page(
            response(
                "200 OK",
                [FIELD_HTML, b"Set-Cookie: " + COOKIE + b"; Path=/"],
                body("A cookie", (COOKIE_GATED,)),
            ),
            (COOKIE_GATED,),
        ),
    }
    return {f"/wire/{name}": case for name, case in cases.items()}


@cache
def wire_pages(stage: str | None = None) -> dict[str, Resource]:
    """The catalogue as the site's pages: the hub, the cases, the pages they point to.

    With ``stage``, each case means what it means to that stage (for the oracle);
    without, what the server sends.
    """
    cases = wire_cases()
    found: dict[str, Resource] = {
        WIRE_HUB: html_page(
            "The wire",
            "\n".join(f'<p><a href="{path}">{path}</a></p>' for path in cases),
            list(cases),
        )
    }
    for path in LANDINGS:
        found[path] = html_page(
            f"Landed on {path}", f'<p><a href="{WIRE_HUB}">hub</a></p>', [WIRE_HUB]
        )
    found[COOKIE_GATED] = Resource(
        kind=COOKIE_GATE, status=403, body=body("Behind a cookie", (WIRE_HUB,)), links=(WIRE_HUB,)
    )
    for path, case in cases.items():
        found[path] = case.stage3 if stage == STAGE3 and case.stage3 else case.meaning
    return found
