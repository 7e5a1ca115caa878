"""Link extraction: from a page's text to the set of absolute URLs it points at.

The page is read by libxml2's HTML parser (through lxml), whose tokenizer follows
HTML5: it takes malformed HTML, upper-case tags and unquoted attributes in its stride,
and reads the corners as a browser does.  The text of ``<title>``, ``<textarea>``,
``<script>``, ``<style>`` and ``<iframe>`` holds no tags; a comment ends at ``--!>``
too; the first of two equal attributes counts; and ``&times`` in
``href="?a=1&timestamp=2"`` stays as it is, where Python's html.parser made it
"?a=1×tamp=2".  Unlike a browser's tree builder, libxml2 keeps elements where HTML5
would drop them, such as a ``<frame>`` outside a ``<frameset>``, so every linking tag
counts wherever it stands.  XML pages go through the same parser, as the chapter's
crawler did: their ``<a href>`` and ``<link href>`` elements look the same to it.

lxml is the one dependency of this module.  It was chosen by measurement (see
shared/tools/bench/RESULTS.md): on the benchmark's pages it extracts the links four times
faster than html.parser, with the same links on every page of the test sites.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from urllib.parse import urljoin

from lxml import etree

from shared.urls import BaseUrl

# The attribute that holds a URL, for each tag whose target a crawler visits.
LINK_ATTRIBUTES = {"a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src"}

# A CDATA section is text in XML: a feed quotes its items' HTML in them, and their links
# are not the feed's (html.parser, which this module used before, skipped them too).  An
# HTML tokenizer reads "<![CDATA[" as a comment that ends at the first ">", and would
# find them, so the sections are removed before parsing.
CDATA_START, CDATA_END = "<![CDATA[", "]]>"


def without_cdata(text: str) -> str:
    """Return text without its CDATA sections, in one pass over it.

    A section runs from its opener to the first ``]]>`` after it.  An opener that no
    ``]]>`` follows is left as it is, with the rest of the text: the HTML tokenizer then
    reads it as a browser does, a comment up to the next ">", and the links after it
    count.  (No later opener can close either, so the scan stops there: each character is
    looked at once, where a regular expression tried every opener against the whole rest
    of the text, a time that grew with the square of the page.)
    """
    pieces, start = [], 0
    while (opener := text.find(CDATA_START, start)) >= 0:
        closer = text.find(CDATA_END, opener + len(CDATA_START))
        if closer < 0:
            break  # unclosed: kept, as is everything after it
        pieces.append(text[start:opener])
        start = closer + len(CDATA_END)
    pieces.append(text[start:])
    return "".join(pieces)


#: How deep elements may nest before their parser is handed them: Chromium's tree stops at
#: 512 levels too.  libxml2 looks through the elements still open for each end tag and for
#: some start tags (<td>, <body>, another <table>), so a page of thousands left open and
#: then thousands of such tags costs it the square of its size: seconds for 200 KB.
MAX_DEPTH = 512
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)")
#: Elements that never hold others, and those whose content is text, not tags: neither
#: counts towards the depth, and neither is ever left out.
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
_RAW = frozenset(
    ["script", "style", "textarea", "title", "xmp", "noembed", "noframes", "plaintext"]
)
_KEPT = _VOID | _RAW | {"a", "frame", "iframe"}


def within_depth(text: str) -> str:
    """Return the page with no element nested deeper than MAX_DEPTH, and no end tag that
    closes nothing: what a browser's tree builder would have made of them too.

    One pass over the tags, counting what is open by name (an overestimate where the
    parser closes elements by itself, which only makes the pass leave out sooner).  A
    start tag past MAX_DEPTH is left out unless it can hold a link or holds text (`_KEPT`),
    and an end tag that matches nothing open is left out: libxml2 ignores it anyway, after
    looking through every element open.  No link is lost.
    """
    open_by_name: Counter[str] = Counter()
    depth, kept, last = 0, [], 0
    for tag in _TAG.finditer(text):
        end, name = tag.group(1), tag.group(2).lower()
        if name in _KEPT:
            continue
        if not end:
            if depth < MAX_DEPTH:
                open_by_name[name] += 1
                depth += 1
                continue
        elif open_by_name[name]:
            open_by_name[name] -= 1
            depth -= 1
            continue
        # Too deep, or closing nothing: left out, up to its ">".  With no ">" after it, no
        # later tag ends either, and what is left goes to the parser as it is.
        close = text.find(">", tag.end())
        if close < 0:
            break
        kept.append(text[last : tag.start()])
        last = close + 1
    kept.append(text[last:])
    return "".join(kept)


class _LinkTarget:
    """Collect raw link values and the first ``<base href>``, in document order.

    lxml calls :meth:`start` for each element as the parser meets it, and builds no
    tree: no memory for the page's elements, and no limit on how deeply they nest (a
    tree stops at 256 levels, and a page of unclosed ``<b>`` tags would lose its links).
    """

    __slots__ = ("base", "links")

    def __init__(self) -> None:
        self.base: str | None = None
        self.links: list[str] = []

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        # libxml2 lower-cases tag and attribute names for us: <A HREF=x> works.
        attribute = LINK_ATTRIBUTES.get(tag)
        if attribute is not None:
            value = attrib.get(attribute)
            if value:
                self.links.append(value)
        elif tag == "base" and self.base is None:
            # The first <base> that has an href, as in HTML5; an empty one means the page.
            self.base = attrib.get("href")

    def close(self) -> tuple[str | None, list[str]]:
        # The parser calls this at the end of each page: hand the page's links over and
        # start the next page afresh, as the parser is used again.
        found = self.base, self.links
        self.base, self.links = None, []
        return found


# Parsers not in use.  A parser is reused from page to page, because lxml looks at its
# target's methods (with the inspect module) on the first page it parses, which is half
# the cost of a small page.  It must not parse two pages at once, so each call takes one
# from here and puts it back when done: list.pop() and append() are atomic, so threads
# (the baseline's) never share one, and there are only as many as ever parsed at once.
_idle: list[etree.HTMLParser] = []


def _extract(text: str) -> tuple[str | None, list[str]]:
    if CDATA_START in text:
        text = without_cdata(text)
    if text.count("<") > MAX_DEPTH:  # fewer tags cannot nest deeper than that
        text = within_depth(text)
    try:
        parser = _idle.pop()
    except IndexError:
        parser = etree.HTMLParser(target=_LinkTarget(), recover=True, no_network=True)
    parser.feed(text)
    found: tuple[str | None, list[str]] = parser.close()
    _idle.append(parser)  # not reached if the page raised: a parser in doubt is dropped
    return found


def raw_links(text: str) -> tuple[str | None, list[str]]:
    """Return a page's first ``<base href>`` (None if it has none) and its raw link values.

    The values are as the page spells them, in document order, entities decoded: nothing
    is joined, normalised or filtered yet.  This is the parser's whole part of the work.
    """
    try:
        return _extract(text)
    except UnicodeEncodeError:
        # A lone surrogate, which no decoder makes but a caller's str may hold, cannot
        # be handed to libxml2 (it reads UTF-8): replace it, as a decoder would.
        return _extract(text.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))


def parse_links(base_url: str, text: str) -> set[str]:
    """Return the normalised absolute http(s) URLs a page links to.

    Relative links are joined to the page's URL, or to its ``<base href>`` when it
    has one.  Fragments are dropped, so "page#a" and "page#b" are one page.  Links
    that are not http(s) or cannot be parsed are skipped, never raised.  Scope and
    --exclude are not applied here: that is :class:`shared.urls.UrlRules`' job.
    """
    base_href, values = raw_links(text)
    base = base_url
    if base_href:
        with contextlib.suppress(ValueError):
            base = urljoin(base_url, base_href.strip())
    join = BaseUrl(base).join  # the base is taken apart once, for all the page's links
    links: set[str] = set()
    for raw in values:
        url = join(raw)
        if url is not None:  # None: not http(s), or not a URL at all
            links.add(url)
    return links
