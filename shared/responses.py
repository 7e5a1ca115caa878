"""What a response means to a crawler, decided once for every stage.

Each stage gets a response its own way (callbacks, generator coroutines or aiohttp),
hands the pieces to :class:`Response`, and lets the functions here decide what the
response means: is it a redirect, and to where; what type and charset the body has;
which bodies are parsed for links; and how the bytes become text.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from shared.urls import resolve

#: A body larger than this is not read to the end: the record says so instead.
MAX_BODY = 10 * 1024 * 1024

#: The statuses whose Location header the crawler follows itself.
REDIRECT_STATUSES = frozenset({300, 301, 302, 303, 307, 308})

#: Bodies of these types are decoded and parsed for links (XML too, as the chapter does).
PARSED_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xml", "text/xml"})

DEFAULT_CHARSET = "utf-8"

# <meta charset="x"> or <meta http-equiv="Content-Type" content="text/html; charset=x">:
# both put "charset=" right before the name, so one pattern finds either.
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_META_SNIFF_BYTES = 4096  # browsers look for the meta charset early in the document too
# A byte that was not UTF-8 in a header, kept by decoding with "surrogateescape".
_RAW_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True, slots=True)
class Response:
    """A complete HTTP response, as any stage received it.

    ``headers`` maps lower-case header names to values.  ``too_large`` is true when
    the body passed :data:`MAX_BODY`; the body is then left empty.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    too_large: bool = False


def is_redirect(status: int) -> bool:
    """Tell whether the crawler should look for a Location to follow."""
    return status in REDIRECT_STATUSES


def redirect_target(url: str, response: Response) -> str | None:
    """Return the absolute, normalised URL a redirect points to.

    The Location header is joined to the request URL, so relative targets work.
    None when the header is missing or does not make an http(s) URL.  Every stage
    decodes it as UTF-8; a byte that is not UTF-8 (``caf\\xe9`` in Latin-1) is
    percent-encoded as it is (``caf%E9``), as a browser sends it on.
    """
    location = response.headers.get("location")
    if not location or not is_redirect(response.status):
        return None
    location = _RAW_BYTE.sub(lambda m: f"%{ord(m[0]) - 0xDC00:02X}", location)
    return resolve(url, location)


def content_type(response: Response) -> tuple[str | None, str | None]:
    """Return the media type (lower case, no parameters) and the header's charset."""
    header = response.headers.get("content-type")
    if not header:
        return None, None
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    # A byte that was not UTF-8 becomes U+FFFD here: the type is recorded and printed.
    return _RAW_BYTE.sub("\ufffd", media_type.strip().lower()) or None, charset


def is_parsed(media_type: str | None) -> bool:
    """Tell whether a body of this type is parsed for links."""
    return media_type in PARSED_TYPES


#: The charsets a page may choose, by Python's name for each: the encodings of the WHATWG
#: Encoding Standard, which browsers read, that Python has (UTF-8 and UTF-16, the legacy
#: single-byte ones, and the Chinese, Japanese and Korean multi-byte ones), and ASCII.
#: Python knows other codecs by name, and decodes in time that grows faster than the
#: page with some (punycode, idna), or maps bytes to bytes (rot13, base64), or opens a
#: door browsers closed (utf-7): a page that names one of those is read as UTF-8.
TEXT_ENCODINGS = frozenset(
    {"utf-8", "utf-16", "utf-16-le", "utf-16-be", "ascii"}
    | {f"iso8859-{n}" for n in (*range(1, 12), *range(13, 17))}
    | {f"cp{n}" for n in (*range(1250, 1259), 866, 874)}
    | {"koi8-r", "koi8-u", "mac-roman", "mac-cyrillic", "tis-620"}
    | {"gbk", "gb2312", "gb18030", "big5", "big5hkscs"}
    | {"euc_jp", "iso2022_jp", "shift_jis", "cp932", "euc_kr", "cp949"}
)


def _known_codec(name: str | None) -> str | None:
    """Return Python's canonical name for a charset, or None if it is no text encoding we read.

    None for a name Python does not know and for one outside :data:`TEXT_ENCODINGS`.
    """
    if not name:
        return None
    try:
        codec = codecs.lookup(name).name
    except (LookupError, UnicodeError):  # UnicodeError: a name with a byte that was not UTF-8
        return None
    return codec if codec in TEXT_ENCODINGS else None


def decode_body(body: bytes, header_charset: str | None) -> tuple[str, str]:
    """Decode a body to text; return the text and the canonical charset used.

    The charset comes from the Content-Type header, else from a ``<meta>`` tag near
    the start of the body, else utf-8; a name that is no text encoding we read
    (:data:`TEXT_ENCODINGS`) counts as none, and the charset returned, which the record
    keeps, is the one used.  Bytes invalid in that charset are replaced, never raised: a
    hostile page must not stop the crawl.
    """
    charset = _known_codec(header_charset)
    if charset is None:
        match = _META_CHARSET.search(body, 0, _META_SNIFF_BYTES)
        charset = _known_codec(match.group(1).decode("ascii")) if match else None
    charset = charset or DEFAULT_CHARSET
    return body.decode(charset, errors="replace"), charset
