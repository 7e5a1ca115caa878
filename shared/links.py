"""Link extraction: from a page's text to the set of absolute URLs it points at.

Built on the standard library's forgiving ``html.parser``, which takes malformed
HTML, upper-case tags and unquoted attributes in its stride.  XML pages go through
the same parser, as the chapter's crawler did: their ``<a href>`` and ``<link href>``
elements look the same to it.
"""

from __future__ import annotations

import contextlib
from html.parser import HTMLParser
from urllib.parse import urljoin

from shared.urls import BaseUrl

# The attribute that holds a URL, for each tag whose target a crawler visits.
LINK_ATTRIBUTES = {"a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src"}


class _LinkCollector(HTMLParser):
    """Collect raw link values and the first ``<base href>``, in document order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.raw_links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # html.parser lower-cases tag and attribute names for us: <A HREF=x> works.
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag in LINK_ATTRIBUTES:
            value = dict(attrs).get(LINK_ATTRIBUTES[tag])
            if value:
                self.raw_links.append(value)

    handle_startendtag = handle_starttag  # <link href=x/> counts as well


def raw_links(text: str) -> tuple[str | None, list[str]]:
    """Return a page's first ``<base href>`` (None if it has none) and its raw link values.

    The values are as the page spells them, in document order, entities decoded: nothing
    is joined, normalised or filtered yet.  This is the parser's whole part of the work.
    """
    collector = _LinkCollector()
    try:
        collector.feed(text)
        collector.close()
    except AssertionError:  # very old html.parser bugs on absurd input; keep what we have
        pass
    return collector.base, collector.raw_links


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
