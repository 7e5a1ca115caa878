"""A local web site that knows what a correct crawl of it must find.

The three crawlers are tested against this site.  It is generated deterministically from
``(pages, seed, fanout)`` and served by aiohttp.web on 127.0.0.1.  Because the site is
built from a definition held in memory, :meth:`Site.expected` can compute, from that
definition alone, the record a correct crawler makes for every URL it reaches: the
oracle never looks at a crawler's output.

Shape of the site
-----------------
* ``/`` is page 0 and ``/p/<n>`` are pages 1..pages-1.  The pages form a complete
  ``fanout``-ary tree (so every page is reachable from the root) and pages with fewer
  than ``fanout`` children get random extra links, so each page has about ``fanout``
  links, spelled in several equivalent ways, and about 2.5 KB of filler text.
* With ``traps=True`` (the default) the root also links to ``/traps/``, a hub for the
  pages listed in :data:`TRAPS`: odd link spellings, redirects of every kind, errors,
  a flaky page, non-HTML bodies, XML, foreign and invalid links, charsets declared in
  every way, broken bytes, a 1 MB page, and private pages for robots.txt to forbid.
* With ``hostile=True`` the root also links to the pages in :data:`HOSTILE`, which
  misbehave at the HTTP level (no answer, reset, short body, garbage, 20 MB, random
  bytes).  With ``wide=N`` it links to ``/wide/0`` .. ``/wide/N-1``, slow tiny pages.

Why the oracle does not depend on the order of the crawl
--------------------------------------------------------
A concurrent crawler discovers URLs in a varying order, and the only per-URL state
that order could change is the number of redirects left when a URL is queued.  The
site is therefore built so that **every URL that answers with a redirect is reachable
by exactly one path**: each redirect is linked from one page only (``/traps/redirects``)
and the members of the redirect cycle and chain are reachable only through their
cycle or chain.  Redirect *targets* may be reached several ways (the two joining
redirects and a plain link all lead to ``/traps/joined``), which is harmless: a target
is an ordinary page, fetched once whichever way comes first.  Every URL is fetched at
most once per crawl, so the flaky page's failure count is deterministic too as long as
:meth:`Site.reset` is called between crawls.  Under this invariant a breadth-first
walk of the definition gives the same set of records as any order of crawling.

Records worth knowing
---------------------
* The flaky page drops the connection (no response at all) on its first two requests:
  ``tries == 3`` when ``max_tries >= 3``, else a failed record.  Its counter is per
  path and :meth:`Site.reset` re-arms it.
* ``/r/chain/0`` .. ``/r/chain/11`` each redirect to the next and ``/r/chain/12`` is a
  page; with ``max_redirect=10`` the crawl fetches ``/r/chain/0`` .. ``/r/chain/10`` and
  the last record's ``next_url`` is the unfetched ``/r/chain/11``.
* Hostile ``silent``, ``reset``, ``short`` and ``garbage`` fail every try; ``huge`` is
  status 200 with ``error=True`` (the body passes the crawler's 10 MiB cap, so it is not
  decoded: ``encoding`` None); ``binary`` is a parsed text/html page with no links.
* No correct crawler ever requests a path starting with :data:`NEVER`.

robots.txt
----------
A crawl begins with ``/robots.txt``, so the oracle has a record for it: a 404 unless
the site serves one.  With ``robots="rules"`` it serves :data:`ROBOTS_TXT`, which
forbids the paths starting with one of :data:`DISALLOWED` (the private trap pages and,
robots.txt rules being prefixes, ``/p/7``, ``/p/70`` .. ``/p/79`` and so on).  The
oracle decides from :data:`DISALLOWED` itself, not by parsing the file: a forbidden URL
it reaches gets a record with no tries, and its links are never found.  ``"silent"``,
``"garbage"`` and ``"broken"`` robots.txt files answer nothing, random bytes and a 500:
each allows everything.

HTTPS
-----
``serve(site, tls=local_tls(directory))`` serves the same site over https, with a
certificate for 127.0.0.1 and localhost from a throw-away CA (made by ``trustme``, a
test dependency), and yields "https://127.0.0.1:PORT/".  A crawler trusts that CA with
``--cafile`` (``Options(cafile=...)``).

The base URL passed to :meth:`Site.expected` must be the one :func:`serve` yields
("http://127.0.0.1:PORT/" or "https://..."): absolute links in the pages are written
with the scheme and address the server is bound to.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import importlib
import logging
import os
import random
import re
import socket
import ssl
import struct
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import quote, unquote, urlsplit

from aiohttp import web

__all__ = [
    "CHAIN_LENGTH",
    "DISALLOWED",
    "HOSTILE",
    "HUGE_SIZE",
    "NEVER",
    "ROBOTS_KINDS",
    "ROBOTS_TXT",
    "TRAPS",
    "Expected",
    "ServerTLS",
    "Site",
    "local_tls",
    "main",
    "serve",
]

#: Redirect statuses a crawler follows, and media types it parses (as in shared.responses;
#: restated here so the oracle is defined by this module alone).
_REDIRECT_STATUSES = frozenset({300, 301, 302, 303, 307, 308})
_PARSED_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xml", "text/xml"})

#: How many hops the long redirect chain has: more than the default max_redirect of 10.
CHAIN_LENGTH = 12

#: Trap name -> path of the page that shows it (paths are the same for every seed).
TRAPS: dict[str, str] = {
    "hub": "/traps/",
    "spellings": "/traps/dir/spellings",
    "spelled_target": "/traps/dir/a",
    "query": "/traps/query",
    "search_1": "/search?q=1",
    "search_2": "/search?q=2",
    "base": "/traps/base",
    "based_target": "/traps/based/x",
    "malformed": "/traps/malformed",
    "redirects": "/traps/redirects",
    "redirect_300": "/r/300",
    "redirect_301": "/r/301",
    "redirect_302": "/r/302",
    "redirect_303": "/r/303",
    "redirect_307": "/r/307",
    "redirect_308": "/r/308",
    "redirect_away": "/r/away",
    "redirect_self": "/r/self",
    "join_a": "/r/join-a",
    "join_b": "/r/join-b",
    "joined": "/traps/joined",
    "cycle": "/r/cycle/1",
    "chain": "/r/chain/0",
    "chain_end": f"/r/chain/{CHAIN_LENGTH}",
    "errors": "/traps/errors",
    "not_found": "/traps/missing",
    "server_error": "/traps/broken",
    "flaky": "/traps/flaky",
    "after_flaky": "/traps/after-flaky",
    "media": "/traps/media",
    "image": "/traps/image.png",
    "pdf": "/traps/doc.pdf",
    "css": "/traps/style.css",
    "json": "/traps/data.json",
    "text": "/traps/notes.txt",
    "xml": "/traps/sitemap.xml",
    "xhtml": "/traps/page.xhtml",
    "text_xml": "/traps/feed.xml",
    "foreign": "/traps/foreign",
    "latin1": "/traps/latin1",
    "latin1_link": "/caf%C3%A9",
    "meta_charset": "/traps/meta-charset",
    "http_equiv": "/traps/http-equiv",
    "bad_utf8": "/traps/bad-utf8",
    "big": "/traps/big",
    "no_type": "/traps/no-type",
    "private": "/traps/private/",
    "private_page": "/traps/private/page",
}

#: Every path starting with this appears only where a crawler must not look for links
#: (comments, scripts, redirect and error bodies, non-HTML bodies, foreign hosts), so a
#: correct crawler never requests one.
NEVER = "/traps/never/"

#: Hostile page name -> path (present with ``hostile=True``).
HOSTILE: dict[str, str] = {
    name: f"/hostile/{name}" for name in ("silent", "reset", "short", "garbage", "huge", "binary")
}

#: Path prefixes that the site's robots.txt forbids (with ``robots="rules"``).
DISALLOWED = ("/traps/private/", "/p/7")

#: The robots.txt served with ``robots="rules"``: a group for some other crawler, which
#: ours must not obey, and the group for everyone else, which it must.
ROBOTS_TXT = (
    "# robots.txt of the crawler500 test site\n"
    "User-agent: SomeOtherBot\n"
    "Disallow: /\n"
    "\n"
    "User-agent: *\n" + "".join(f"Disallow: {prefix}\n" for prefix in DISALLOWED)
)

#: What ``Site(robots=...)`` may serve at /robots.txt (None, the default: a 404).
ROBOTS_KINDS = ("rules", "silent", "garbage", "broken")

# Hostile pages that never give a complete response: every try fails.
_FAILING_KINDS = frozenset({"silent", "reset", "short", "garbage"})

#: Size of the hostile huge body, twice the crawlers' 10 MiB cap.
HUGE_SIZE = 20 * 1024 * 1024
_HUGE_CHUNK = 256 * 1024
_SILENT_SECONDS = 3600.0  # far longer than any crawler's timeout; cancelled at shutdown

# Characters left unquoted in a canonical path or query, the same sets as shared.urls uses,
# so the site's keys are spelled the way a crawler's normalised URL is.
_SAFE_PATH = "/:@!$&'()*+,;=-._~%"
_SAFE_QUERY = _SAFE_PATH + "?"

_HTML = "text/html; charset=utf-8"

# Filler vocabulary: plain words only, so filler can never contain markup or a link.
_WORD_TEXT = (
    "crawler fetch queue seen redirect link page host port socket select callback future "
    "task coroutine generator yield loop event buffer response request header body "
    "status charset parser anchor scope timeout retry worker concurrency latency "
    "throughput thread lock queue join cancel schedule wakeup readable writable "
    "nonblocking connect close stream chunk length encoding decode token frame stack "
    "state machine continuation resume suspend await async python chapter architecture "
    "design simple small clear"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass(frozen=True)
class Expected:
    """What a correct crawler records for one URL.

    ``status`` is None when every try failed; ``next_url`` is the normalised absolute
    target of a redirect; ``content_type`` the lower-case media type from the header
    (None when there is none); ``encoding`` the canonical codec name used to decode a
    parsed 200 page; ``num_urls`` the number of distinct in-scope, not excluded links on
    the page; ``tries`` the attempts made; ``error`` whether the record carries an error.
    """

    status: int | None
    next_url: str | None
    content_type: str | None
    encoding: str | None
    num_urls: int
    tries: int
    error: bool


@dataclass(frozen=True)
class _Resource:
    """The definition of one URL: how it answers and which links its body holds.

    ``links`` are canonical in-site paths (with query), i.e. exactly what a correct
    parser finds after joining and normalising, restricted to this host.  ``target`` is a
    redirect's canonical target: an in-site path, or an absolute URL on another host.
    Bodies are templates in which ``{origin}``, ``{netloc}`` and ``{port}`` are replaced
    by the served address, and ``{SCHEME}`` by its scheme in upper case.
    """

    kind: str = "static"
    status: int = 200
    content_type: str | None = _HTML
    body: bytes = b""
    links: tuple[str, ...] = ()
    encoding: str | None = "utf-8"
    location: str | None = None
    target: str | None = None
    drops: int = 0
    page: int = -1


# --------------------------------------------------------------------------- definitions


def _leaf(title: str) -> _Resource:
    """A small page whose only link goes back to the trap hub."""
    body = (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n"
        f'<h1>{title}</h1>\n<p><a href="/traps/">Back to the traps</a></p>\n</body></html>\n'
    )
    return _Resource(body=body.encode(), links=("/traps/",))


def _html(title: str, inner: str, links: Sequence[str], content_type: str = _HTML) -> _Resource:
    """A UTF-8 HTML trap page whose body holds exactly the given canonical links."""
    body = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body>\n<h1>{title}</h1>\n{inner}\n</body></html>\n"
    )
    return _Resource(body=body.encode(), links=tuple(links), content_type=content_type)


def _redirect(status: int, location: str, target: str, content_type: str = _HTML) -> _Resource:
    """A redirect; its body has a link that must not be followed (only 200s are parsed)."""
    body = f'<html><body><a href="{NEVER}redirect-body">moved</a></body></html>\n'.encode()
    if content_type.startswith("text/plain"):
        body = f"Moved to {location}\n".encode()
    return _Resource(
        status=status, location=location, target=target, body=body, content_type=content_type
    )


def _inert(content_type: str, body: bytes) -> _Resource:
    """A 200 response of a type that is fetched but never parsed, with href bytes inside."""
    return _Resource(content_type=content_type, body=body, encoding=None)


def _big_page() -> _Resource:
    """A page of about 1 MB with links at its start, middle and end."""
    paragraph = ("<p>" + " ".join(_WORDS) + "</p>\n").encode()
    half = paragraph * (512 * 1024 // len(paragraph))
    body = b"".join(
        [
            b"<!DOCTYPE html>\n<html><head><title>Big</title></head><body>\n",
            b'<p><a href="/traps/big/1">first</a></p>\n',
            half,
            b'<p><a href="big/2">middle</a></p>\n',
            half,
            b'<p><a href="{origin}/traps/big/3#end">last</a></p>\n</body></html>\n',
        ]
    )
    return _Resource(body=body, links=("/traps/big/1", "/traps/big/2", "/traps/big/3"))


@cache
def _traps() -> dict[str, _Resource]:
    """Build the trap pages once; they do not depend on the seed."""
    t: dict[str, _Resource] = {}
    hub_targets = [
        "spellings",
        "query",
        "base",
        "malformed",
        "redirects",
        "errors",
        "media",
        "xml",
        "xhtml",
        "text_xml",
        "foreign",
        "latin1",
        "meta_charset",
        "http_equiv",
        "bad_utf8",
        "big",
        "no_type",
        "private",
    ]
    # Relative spellings ("dir/spellings") resolve against /traps/.
    items = "".join(
        f'<li><a href="{TRAPS[name].removeprefix("/traps/")}">{name}</a></li>\n'
        for name in hub_targets
    )
    t["/traps/"] = _html(
        "Traps",
        f'<ul>\n{items}</ul>\n<p><a href="../">home</a></p>',
        [TRAPS[name] for name in hub_targets] + ["/"],
    )

    # One target spelled many ways; all of them count once.
    t["/traps/dir/spellings"] = _html(
        "Link spellings",
        """<ul>
<li><a href="a">relative</a></li>
<li><a href="./a">dot slash</a></li>
<li><a href="a#top">with a fragment</a></li>
<li><a href="sub/../a">dot-dot inside the path</a></li>
<li><a href="/traps/dir/a">root-relative</a></li>
<li><a href="{origin}/traps/dir/a">absolute</a></li>
<li><a href="{SCHEME}://{netloc}/traps/dir/a#Section">upper-case scheme, fragment</a></li>
<li><a href="//{netloc}/traps/dir/b">scheme-relative</a></li>
<li><a href="../target">parent directory</a></li>
<li><a href="../../">two levels up: the root</a></li>
<li><a href="#self">this very page</a></li>
</ul>""",
        ["/traps/dir/a", "/traps/dir/b", "/traps/target", "/", "/traps/dir/spellings"],
    )
    t["/traps/dir/a"] = _leaf("Spelled target a")
    t["/traps/dir/b"] = _leaf("Spelled target b")
    t["/traps/target"] = _leaf("Parent-directory target")

    # The query string is part of a page's identity.
    t["/traps/query"] = _html(
        "Query strings",
        """<p><a href="/search?q=1">one</a> <a href="/search?q=2">two</a>
<a href="/search?q=1#results">one again</a> <a href="{origin}/search?q=2">two again</a>
<a href="/search?q=a b">a space in the query</a> <a href="/search">no query</a></p>""",
        ["/search?q=1", "/search?q=2", "/search?q=a%20b", "/search"],
    )
    for query in ("q=1", "q=2", "q=a%20b", ""):
        path = "/search?" + query if query else "/search"
        title = f"Search {unquote(query) or '(empty)'}"
        t[path] = _html(title, '<p><a href="/traps/query">back</a></p>', ["/traps/query"])

    # <base href> changes what relative links mean (but not root-relative ones).
    t["/traps/base"] = _Resource(
        body=b"""<!DOCTYPE html>
<html><head><base href="{origin}/traps/based/"><title>Base</title></head><body>
<p><a href="x">x under the base</a> <a href="./y#frag">y under the base</a>
<a href="../target">parent of the base</a> <a href="/traps/">root-relative</a></p>
</body></html>
""",
        links=("/traps/based/x", "/traps/based/y", "/traps/target", "/traps/"),
    )
    t["/traps/based/x"] = _leaf("Based x")
    t["/traps/based/y"] = _leaf("Based y")

    # Broken markup that a tolerant parser still reads; comments and scripts hold no links.
    malformed = (
        b"<html><head><title>Malformed</title>\n<body>\n"
        b"<p>Unclosed paragraph <b>bold <i>italic\n"
        b"<div>1 < 2 and 3 > 2, a stray < here, <<a href=/traps/m/1>unquoted after a stray</a>\n"
        b'<A HREF="/traps/m/2">upper-case tag</A>\n'
        b"<a href='/traps/m/3'>single quotes, never closed\n"
        b'<a href="  \n   /traps/m/4  \n  ">spaces and newlines around the URL</a>\n'
        b"<a class=x href=/traps/m/5 >attribute not first</a>\n"
        b'<map name=m><AREA HREF="/traps/m/6" alt=six></map>\n'
        b'<link rel=stylesheet href="/traps/style.css">\n'
        b'<iframe src="/traps/m/frame"></iframe>\n'
        b"<FRAME SRC=/traps/m/frame2>\n"
        b'<img src="/traps/never/img.png"> <script src="/traps/never/script.js"></script>\n'
        b'<a name="anchor">no href at all</a>\n'
        b'<!-- <a href="/traps/never/comment">commented out</a> -->\n'
        b"<script>var s = '<a href=\"/traps/never/script\">';</script>\n"
        b'<a href="/traps/m/1#again">duplicate with a fragment\n'
    )
    t["/traps/malformed"] = _Resource(
        body=malformed,
        links=(
            "/traps/m/1",
            "/traps/m/2",
            "/traps/m/3",
            "/traps/m/4",
            "/traps/m/5",
            "/traps/m/6",
            "/traps/style.css",
            "/traps/m/frame",
            "/traps/m/frame2",
        ),
    )
    for name in ("1", "2", "3", "4", "5", "6", "frame", "frame2"):
        t[f"/traps/m/{name}"] = _leaf(f"Malformed target {name}")

    # Redirects.  Each /r/ URL is linked from this page only (see the module docstring).
    redirect_links = [
        "/r/300",
        "/r/301",
        "/r/302",
        "/r/303",
        "/r/307",
        "/r/308",
        "/r/away",
        "/r/self",
        "/r/join-a",
        "/r/join-b",
        "/traps/joined",
        "/r/cycle/1",
        "/r/chain/0",
    ]
    t["/traps/redirects"] = _html(
        "Redirects",
        "\n".join(f'<p><a href="{path}">{path}</a></p>' for path in redirect_links),
        redirect_links,
    )
    t["/r/300"] = _redirect(300, "./../traps/land/300", "/traps/land/300")
    t["/r/301"] = _redirect(301, "{origin}/traps/land/301", "/traps/land/301", "text/plain")
    t["/r/302"] = _redirect(302, "../traps/land/302", "/traps/land/302")
    t["/r/303"] = _redirect(303, "/traps/land/303", "/traps/land/303")
    t["/r/307"] = _redirect(307, "//{netloc}/traps/land/307", "/traps/land/307")
    t["/r/308"] = _redirect(308, "{SCHEME}://{netloc}/traps/land/308#frag", "/traps/land/308")
    for status in (300, 301, 302, 303, 307, 308):
        t[f"/traps/land/{status}"] = _leaf(f"Landed from a {status}")
    t["/r/away"] = _redirect(
        302, "http://other.example/elsewhere", "http://other.example/elsewhere"
    )
    t["/r/self"] = _redirect(302, "/r/self", "/r/self")
    t["/r/join-a"] = _redirect(301, "/traps/joined", "/traps/joined")
    t["/r/join-b"] = _redirect(307, "{origin}/traps/joined#x", "/traps/joined")
    t["/traps/joined"] = _leaf("Where two redirects join")
    t["/r/cycle/1"] = _redirect(302, "/r/cycle/2", "/r/cycle/2")
    t["/r/cycle/2"] = _redirect(302, "1", "/r/cycle/1")
    for hop in range(CHAIN_LENGTH):
        t[f"/r/chain/{hop}"] = _redirect(302, f"/r/chain/{hop + 1}", f"/r/chain/{hop + 1}")
    t[f"/r/chain/{CHAIN_LENGTH}"] = _leaf("End of the long chain")

    # Errors: a 404 (any undefined path), a 500 and a page that drops the connection.
    t["/traps/errors"] = _html(
        "Errors",
        '<p><a href="missing">404</a> <a href="broken">500</a> <a href="flaky">flaky</a></p>',
        ["/traps/missing", "/traps/broken", "/traps/flaky"],
    )
    t["/traps/broken"] = _Resource(
        status=500,
        body=f'<html><body>Oops. <a href="{NEVER}500">not parsed</a></body></html>'.encode(),
    )
    # The connection is dropped on the first two requests (counted per path, see reset()).
    flaky = _html("Flaky", '<p><a href="after-flaky">after</a></p>', ["/traps/after-flaky"])
    t["/traps/flaky"] = dataclasses.replace(flaky, drops=2)
    t["/traps/after-flaky"] = _leaf("Reached through the flaky page")

    # Bodies fetched but never parsed, though they contain href= bytes.
    t["/traps/media"] = _html(
        "Media",
        """<p><img src="image.png"> <a href="image.png">image</a> <a href="doc.pdf">pdf</a>
<a href="style.css">css</a> <a href="data.json">json</a> <a href="notes.txt">text</a></p>""",
        [
            "/traps/image.png",
            "/traps/doc.pdf",
            "/traps/style.css",
            "/traps/data.json",
            "/traps/notes.txt",
        ],
    )
    t["/traps/image.png"] = _inert(
        "image/png",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
        b'\x00\x1f\x15\xc4\x89 <a href="/traps/never/png">\x00\x00\x00\x00IEND\xaeB`\x82',
    )
    t["/traps/doc.pdf"] = _inert(
        "application/pdf",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n"
        b'% <a href="/traps/never/pdf"> href=/traps/never/pdf2\n%%EOF\n',
    )
    t["/traps/style.css"] = _inert(
        "text/css",
        b'a { background: url(/traps/never/css); } /* <a href="/traps/never/css2"> */\n',
    )
    t["/traps/data.json"] = _inert(
        "application/json",
        b'{"href": "/traps/never/json", "html": "<a href=\\"/traps/never/json2\\">"}\n',
    )
    t["/traps/notes.txt"] = _inert(
        "text/plain; charset=utf-8", b'Plain text is not parsed: <a href="/traps/never/text">\n'
    )

    # XML flavours are parsed: html.parser sees <link> and <a> as tags.
    t["/traps/sitemap.xml"] = _Resource(
        content_type="application/xml",
        body=b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>{origin}/traps/never/loc</loc></url>
<link href="/traps/xml/1"/>
<a href="{origin}/traps/xml/2">two</a>
</urlset>
""",
        links=("/traps/xml/1", "/traps/xml/2"),
    )
    t["/traps/page.xhtml"] = _Resource(
        content_type="application/xhtml+xml; charset=utf-8",
        body=b"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>XHTML</title>
<link rel="next" href="xml/3"/></head>
<body><p><a href="/traps/">hub</a></p></body></html>
""",
        links=("/traps/xml/3", "/traps/"),
    )
    t["/traps/feed.xml"] = _Resource(
        content_type="text/xml",
        body=b"""<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Feed</title>
<link href="{origin}/traps/xml/4"/>
<entry><link rel="alternate" href="/traps/xml/4#entry"/><id>{origin}/traps/never/id</id></entry>
</feed>
""",
        links=("/traps/xml/4",),
    )
    for n in range(1, 5):
        t[f"/traps/xml/{n}"] = _leaf(f"Linked from XML {n}")

    # Links that are never fetched: other hosts, other schemes, invalid URLs.
    t["/traps/foreign"] = _html(
        "Foreign links",
        """<ul>
<li><a href="http://other.example/">other host</a></li>
<li><a href="https://www.other.example/path?q=1">other host, https</a></li>
<li><a href="HTTP://WWW.OTHER.EXAMPLE:8080/Upper">other host, upper case</a></li>
<li><a href="//other.example/scheme-relative">other host, scheme-relative</a></li>
<li><a href="http://localhost:{port}/traps/never/localhost">same machine, other name</a></li>
<li><a href="mailto:someone@other.example">mail</a></li>
<li><a href="MAILTO:SOMEONE@OTHER.EXAMPLE">mail, upper case</a></li>
<li><a href="javascript:void(0)">script</a></li>
<li><a href="JavaScript:alert('hi')">script, mixed case</a></li>
<li><a href="ftp://127.0.0.1/pub/file.txt">ftp</a></li>
<li><a href="data:text/html;base64,PGEgaHJlZj0iLyI+">data</a></li>
<li><a href="tel:+15550100">phone</a></li>
<li><a href="http://[::1">invalid IPv6 literal</a></li>
<li><a href="http://127.0.0.1:notaport/">invalid port</a></li>
<li><a href="http://127.0.0.1:99999/">port out of range</a></li>
<li><a href="/traps/">the only link to crawl</a></li>
</ul>""",
        ["/traps/"],
    )

    # Charsets, declared by the header, by <meta charset>, by <meta http-equiv>.
    t["/traps/latin1"] = _Resource(
        content_type="text/html; charset=latin-1",
        encoding="iso8859-1",
        body=b"""<!DOCTYPE html>
<html><head><title>Latin-1</title></head><body>
<p>Caf\xe9 cr\xe8me, cr\xe8me br\xfbl\xe9e, na\xefve \xa9 \xbd</p>
<p><a href="/caf\xe9">the caf\xe9</a> <a href="/traps/">back</a></p>
</body></html>
""",
        links=("/caf%C3%A9", "/traps/"),
    )
    t["/caf%C3%A9"] = _leaf("Caf\u00e9")
    t["/traps/meta-charset"] = _Resource(
        content_type="text/html",
        encoding="iso8859-1",
        body=b"""<!DOCTYPE html>
<html><head><meta charset="iso-8859-1"><title>Meta charset</title></head><body>
<p>\xc0 la carte, gar\xe7on!</p>
<p><a href="/caf\xe9#menu">caf\xe9</a> <a href="na\xefve">na\xefve</a></p>
</body></html>
""",
        links=("/caf%C3%A9", "/traps/na%C3%AFve"),
    )
    t["/traps/na%C3%AFve"] = _leaf("Na\u00efve")
    t["/traps/http-equiv"] = _Resource(
        content_type="text/html",
        encoding="cp1252",
        body=b"""<html><head>
<meta http-equiv="Content-Type" content="text/html; charset=windows-1252">
<title>http-equiv</title></head><body>
<p>\x93Quoted\x94 and \x805</p>
<p><a href="/traps/\x80">the euro</a> <a href="/traps/">back</a></p>
</body></html>
""",
        links=("/traps/%E2%82%AC", "/traps/"),
    )
    t["/traps/%E2%82%AC"] = _leaf("Euro")
    t["/traps/bad-utf8"] = _Resource(
        body=b"""<html><head><title>Bad UTF-8</title></head><body>
<p><a href="/traps/garbage/1">before the garbage</a></p>
<p>\xff\xfe\xfd broken \xc3\x28 bytes \xe2\x82 here \x80\x81</p>
<p><a href="garbage/2">after the garbage</a></p>
</body></html>
""",
        links=("/traps/garbage/1", "/traps/garbage/2"),
    )
    t["/traps/garbage/1"] = _leaf("Before the garbage")
    t["/traps/garbage/2"] = _leaf("After the garbage")

    t["/traps/big"] = _big_page()
    for n in range(1, 4):
        t[f"/traps/big/{n}"] = _leaf(f"Linked from the big page {n}")

    # Pages that robots.txt forbids when the site serves one; ordinary pages otherwise.
    t["/traps/private/"] = _html(
        "Private",
        '<p><a href="page">a private page</a> <a href="/traps/">back</a></p>',
        ["/traps/private/page", "/traps/"],
    )
    t["/traps/private/page"] = _leaf("A private page")

    # A response without a Content-Type header: recorded, not parsed.
    t["/traps/no-type"] = _Resource(
        kind="raw",
        content_type=None,
        encoding=None,
        body=f'<html><body><a href="{NEVER}no-type">untyped</a></body></html>\n'.encode(),
    )
    return t


_NOT_FOUND = _Resource(
    status=404,
    body=f'<html><body>Not found. <a href="{NEVER}404">not parsed</a></body></html>\n'.encode(),
)


@cache
def _binary_body() -> bytes:
    """Deterministic random bytes with no "<", so no parser can find a tag in them."""
    return random.Random(20240601).randbytes(64 * 1024).replace(b"<", b"?")


def _robots_resource(kind: str) -> _Resource:
    """What /robots.txt answers with ``Site(robots=kind)``."""
    if kind == "rules":
        body = ROBOTS_TXT.encode()
        return _Resource(content_type="text/plain; charset=utf-8", body=body, encoding=None)
    if kind == "silent":
        return _Resource(kind="silent", content_type=None)
    if kind == "garbage":  # a 200 whose body holds no rule at all
        return _Resource(content_type="text/plain", body=_binary_body(), encoding=None)
    if kind == "broken":
        return _Resource(status=500, body=b"<html><body>robots.txt is broken</body></html>\n")
    raise ValueError(f"robots must be None or one of {', '.join(ROBOTS_KINDS)} (got {kind!r})")


def _hostile_resources() -> dict[str, _Resource]:
    """The hostile pages; only ``kind`` matters for most of them."""
    found: dict[str, _Resource] = {}
    for name, path in HOSTILE.items():
        if name == "binary":
            found[path] = _Resource(kind=name, content_type="text/html", body=_binary_body())
        elif name == "huge":
            found[path] = _Resource(kind=name, content_type=_HTML)
        else:
            found[path] = _Resource(kind=name, content_type=None)
    return found


def _canonical(path_qs: str) -> str:
    """Spell a request target the way a normalised URL spells it (upper-case escapes)."""
    path, sep, query = path_qs.partition("?")
    path = quote(unquote(path), safe=_SAFE_PATH)
    if sep and query:
        return path + "?" + quote(unquote(query), safe=_SAFE_QUERY)
    return path


def _media_type(header: str | None) -> str | None:
    """The lower-case media type of a Content-Type header value."""
    if header is None:
        return None
    return header.partition(";")[0].strip().lower() or None


def _origin(base_url: str) -> str:
    """Return "http://127.0.0.1:PORT" from a base URL, dropping the path and a default port."""
    parts = urlsplit(base_url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    default = {"http": 80, "https": 443}.get(scheme)
    port = parts.port
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


def _fill(template: bytes, origin: str) -> bytes:
    """Put the served address into a body or header template."""
    scheme, netloc = origin.split("://", 1)
    port = netloc.rpartition(":")[2]
    return (
        template.replace(b"{origin}", origin.encode())
        .replace(b"{netloc}", netloc.encode())
        .replace(b"{port}", port.encode())
        .replace(b"{SCHEME}", scheme.upper().encode())
    )


# --------------------------------------------------------------------------- the site


@dataclass
class _Walk:
    """The result of the oracle's breadth-first walk."""

    records: dict[str, Expected] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)


class Site:
    """A deterministic test site that can serve itself and predict a correct crawl.

    ``pages`` normal pages with about ``fanout`` links each are generated from
    ``random.Random(seed)``.  ``latency`` delays every response; ``traps`` adds the trap
    pages (:data:`TRAPS`), ``hostile`` the hostile ones (:data:`HOSTILE`), and ``wide``
    pages ``/wide/<i>`` linked from the root that each take ``wide_delay`` seconds.
    ``robots`` chooses what /robots.txt answers: None (a 404) or one of
    :data:`ROBOTS_KINDS`.

    ``requests`` (canonical path+query -> count), ``user_agents`` (User-Agent header ->
    count) and ``max_in_flight`` are observations made by the server; :meth:`reset`
    clears them and re-arms the flaky page.
    """

    def __init__(
        self,
        pages: int = 300,
        seed: int = 1,
        fanout: int = 5,
        *,
        latency: float = 0.0,
        traps: bool = True,
        hostile: bool = False,
        wide: int = 0,
        wide_delay: float = 0.0,
        robots: str | None = None,
    ) -> None:
        """Generate the site's link structure and filler text (bodies render on request)."""
        if pages < 1 or fanout < 1:
            raise ValueError("a site needs at least one page and a fanout of at least one")
        self.pages = pages
        self.seed = seed
        self.fanout = fanout
        self.latency = latency
        self.traps = traps
        self.hostile = hostile
        self.wide = wide
        self.wide_delay = wide_delay
        self.robots = robots
        self.requests: collections.Counter[str] = collections.Counter()
        self.user_agents: collections.Counter[str] = collections.Counter()
        self.max_in_flight = 0
        self._in_flight = 0
        self._drop_counts: collections.Counter[str] = collections.Counter()
        # The definition never changes, so each walk of it is computed once.
        self._walks: dict[tuple[str, int, str | None, int, bool], _Walk] = {}

        rng = random.Random(seed)
        # A pool of paragraphs shared by all pages keeps memory flat for big sites; each
        # page picks its own five, so pages still differ from each other.
        self._filler = [
            "<p>" + " ".join(rng.choice(_WORDS) for _ in range(70)) + "</p>\n" for _ in range(16)
        ]
        # Only the random extra links are stored; tree links are computed from the index.
        self._extra: list[tuple[int, ...]] = []
        for n in range(pages):
            missing = fanout - len(self._children(n))
            self._extra.append(tuple(rng.randrange(pages) for _ in range(missing)))

        self._specials: dict[str, _Resource] = {}
        if traps:
            self._specials.update(_traps())
        if hostile:
            self._specials.update(_hostile_resources())
        for i in range(wide):
            body = f"<html><body><p>Wide page {i}</p></body></html>\n".encode()
            self._specials[f"/wide/{i}"] = _Resource(kind="wide", body=body)
        if robots is not None:
            self._specials["/robots.txt"] = _robots_resource(robots)

    # ----------------------------------------------------------------- definition

    def _children(self, n: int) -> range:
        """Tree children of page n in a complete fanout-ary tree."""
        first = n * self.fanout + 1
        return range(min(first, self.pages), min(first + self.fanout, self.pages))

    def _page_links(self, n: int) -> list[int]:
        """Page n's links to other pages, in body order (may repeat, may include itself)."""
        return [*self._children(n), *self._extra[n]]

    @staticmethod
    def _page_path(n: int) -> str:
        """The canonical path of page n: the root is page 0."""
        return "/" if n == 0 else f"/p/{n}"

    def _root_extras(self) -> list[str]:
        """Canonical paths the root links to besides other pages."""
        extras = ["/traps/"] if self.traps else []
        extras += [f"/wide/{i}" for i in range(self.wide)]
        if self.hostile:
            extras += list(HOSTILE.values())
        return extras

    def _resource(self, path: str) -> _Resource:
        """The definition of a canonical path (404 for anything undefined)."""
        special = self._specials.get(path)
        if special is not None:
            return special
        if path == "/":
            n = 0
        elif path.startswith("/p/") and path[3:].isdigit() and not path[3:].startswith("0"):
            n = int(path[3:])
            if n >= self.pages:
                return _NOT_FOUND
        else:
            return _NOT_FOUND
        links = [self._page_path(m) for m in self._page_links(n)]
        if n == 0:
            links += self._root_extras()
        return _Resource(kind="page", links=tuple(links), page=n)

    def _spell(self, src: int, dst: int, style: int, origin: str) -> str:
        """One of several equivalent spellings of a link from page src to page dst."""
        path = self._page_path(dst)
        if style == 0:
            return path
        if style == 1:  # relative to the linking page's directory
            if src == 0:
                return "./" if dst == 0 else f"p/{dst}"
            return "../" if dst == 0 else str(dst)
        if style == 2:
            return origin + path
        return f"{path}#part{src % 7}"

    def _render_page(self, n: int, origin: str) -> bytes:
        """Render a normal page on request, so big sites hold no bodies in memory."""
        out = [
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {n}</title>'
            f"</head>\n<body>\n<h1>Page {n}</h1>\n"
        ]
        links = self._page_links(n)
        for k in range(5):
            out.append(self._filler[(n * 5 + k * 3 + self.seed) % len(self._filler)])
            for j in range(k, len(links), 5):  # spread the links through the text
                target = self._spell(n, links[j], (n + j) % 4, origin)
                out.append(f'<p>See <a href="{target}">page {links[j]}</a>.</p>\n')
        if n == 0:
            for path in self._root_extras():
                out.append(f'<p><a href="{path.lstrip("/")}">{path}</a></p>\n')
        out.append("</body></html>\n")
        return "".join(out).encode()

    # ----------------------------------------------------------------- oracle

    def _walk(
        self,
        base_url: str,
        max_redirect: int,
        exclude: str | None,
        max_tries: int,
        ignore_robots: bool,
    ) -> _Walk:
        """Breadth-first walk of the definition with the crawler's rules (memoised)."""
        key = (base_url, max_redirect, exclude, max_tries, ignore_robots)
        if key not in self._walks:
            self._walks[key] = self._compute_walk(*key)
        return self._walks[key]

    def _robots_record(self, max_tries: int) -> Expected:
        """The record of the /robots.txt fetch that begins every crawl that obeys it."""
        res = self._resource("/robots.txt")
        if res.kind in _FAILING_KINDS:
            return Expected(None, None, None, None, 0, max_tries, True)
        return Expected(res.status, None, _media_type(res.content_type), None, 0, 1, False)

    def _compute_walk(
        self,
        base_url: str,
        max_redirect: int,
        exclude: str | None,
        max_tries: int,
        ignore_robots: bool,
    ) -> _Walk:
        """Walk the definition breadth-first, applying the crawl rules to every URL."""
        origin = _origin(base_url)
        pattern = re.compile(exclude) if exclude else None
        walk = _Walk()
        # robots.txt is fetched first and recorded, but it is no page: it has no depth.
        if not ignore_robots:
            walk.records[origin + "/robots.txt"] = self._robots_record(max_tries)
        # Decided from the site's own definition: the prefixes it writes into robots.txt.
        obeyed = not ignore_robots and self.robots == "rules"
        disallowed = DISALLOWED if obeyed else ()

        def allowed(url: str) -> bool:
            # Every in-site path is in scope by construction; only --exclude can refuse it.
            return pattern is None or not pattern.search(url)

        queue: collections.deque[tuple[str, int]] = collections.deque([("/", max_redirect)])
        walk.depth[origin + "/"] = 0
        while queue:
            path, redirects_left = queue.popleft()
            url = origin + path
            depth = walk.depth[url]
            if path.startswith(disallowed):
                walk.records[url] = Expected(None, None, None, None, 0, 0, True)  # skipped
                continue
            res = self._resource(path)
            discovered: list[str] = []
            if res.kind in _FAILING_KINDS or res.drops >= max_tries:
                walk.records[url] = Expected(None, None, None, None, 0, max_tries, True)
                continue
            tries = res.drops + 1
            media = _media_type(res.content_type)
            if res.status in _REDIRECT_STATUSES:
                assert res.target is not None
                in_site = res.target.startswith("/")
                next_url = origin + res.target if in_site else res.target
                walk.records[url] = Expected(res.status, next_url, media, None, 0, tries, False)
                follow = redirects_left > 0 and in_site and allowed(next_url)
                if follow and next_url not in walk.depth:
                    walk.depth[next_url] = depth + 1
                    queue.append((res.target, redirects_left - 1))
                continue
            if res.kind == "huge":
                # The crawler stops reading at 10 MiB: status and type known, body not decoded.
                walk.records[url] = Expected(200, None, media, None, 0, 1, True)
                continue
            parsed = res.status == 200 and media in _PARSED_TYPES
            if parsed:
                discovered = list(dict.fromkeys(p for p in res.links if allowed(origin + p)))
            encoding = res.encoding if parsed else None
            walk.records[url] = Expected(
                res.status, None, media, encoding, len(discovered), tries, False
            )
            for link in discovered:
                if origin + link not in walk.depth:
                    walk.depth[origin + link] = depth + 1
                    queue.append((link, max_redirect))
        return walk

    def expected(
        self,
        base_url: str,
        *,
        max_redirect: int = 10,
        exclude: str | None = None,
        max_tries: int = 4,
        ignore_robots: bool = False,
    ) -> dict[str, Expected]:
        """The oracle: the record a correct crawl from base_url makes, per absolute URL.

        Unless ``ignore_robots``, that includes the record of /robots.txt, and a record
        with no tries for each URL reached that robots.txt forbids.
        """
        walk = self._walk(base_url, max_redirect, exclude, max_tries, ignore_robots)
        return dict(walk.records)

    def levels(
        self,
        base_url: str,
        *,
        max_redirect: int = 10,
        exclude: str | None = None,
        max_tries: int = 4,
        ignore_robots: bool = False,
    ) -> list[int]:
        """How many URLs are first reached at each depth (0 = the root) of the crawl.

        robots.txt is reached by no link, so it is in no level.
        """
        walk = self._walk(base_url, max_redirect, exclude, max_tries, ignore_robots)
        depths = walk.depth.values()
        sizes = [0] * (max(depths) + 1)
        for depth in depths:
            sizes[depth] += 1
        return sizes

    def reset(self) -> None:
        """Forget the observations and re-arm per-URL state such as the flaky page."""
        self.requests.clear()
        self.user_agents.clear()
        self.max_in_flight = self._in_flight
        self._drop_counts.clear()

    # ----------------------------------------------------------------- serving

    def make_app(self) -> web.Application:
        """An aiohttp application serving this site from one catch-all route."""
        app = web.Application()
        # Handlers that may still be running at shutdown (silent pages, slow pages, a
        # client that stopped reading the huge page) are cancelled so cleanup is prompt.
        handlers: set[asyncio.Task[object]] = set()

        async def handle(request: web.Request) -> web.StreamResponse:
            task = asyncio.current_task()
            if task is not None:
                handlers.add(task)
            try:
                return await self._handle(request)
            finally:
                handlers.discard(task)

        async def cancel_handlers(_app: web.Application) -> None:
            for task in list(handlers):
                task.cancel()

        app.router.add_get("/{tail:.*}", handle)
        app.on_shutdown.append(cancel_handlers)
        return app

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        """Count the request, wait the configured latency, then answer as defined."""
        path = _canonical(request.raw_path)
        self.requests[path] += 1
        self.user_agents[request.headers.get("User-Agent", "")] += 1
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency > 0:
                await asyncio.sleep(self.latency)
            return await self._answer(request, path, self._resource(path))
        finally:
            self._in_flight -= 1

    async def _answer(self, request: web.Request, path: str, res: _Resource) -> web.StreamResponse:
        """Produce the response (or the misbehaviour) a resource defines."""
        origin = _served_origin(request)
        if res.drops:
            self._drop_counts[path] += 1
            if self._drop_counts[path] <= res.drops:
                return _send_raw(request, b"")
        kind = res.kind
        if kind == "silent":
            await asyncio.sleep(_SILENT_SECONDS)
            return web.Response(status=504)
        if kind == "reset":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
            return _send_raw(request, head + b"<p>" + b"x" * 2000, reset=True)
        if kind == "short":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5000\r\n\r\n"
            return _send_raw(request, head + b"y" * 100)
        if kind == "garbage":
            return _send_raw(request, b"GARBAGE\r\n\r\n")
        if kind == "huge":
            return await _send_huge(request)
        if kind == "raw":
            # No Content-Type header at all, which web.Response would always add.
            length = f"Content-Length: {len(res.body)}\r\n".encode()
            head = b"HTTP/1.1 200 OK\r\n" + length + b"Connection: close\r\n\r\n"
            return _send_raw(request, head + res.body)
        if kind == "wide" and self.wide_delay > 0:
            await asyncio.sleep(self.wide_delay)
        body = self._render_page(res.page, origin) if kind == "page" else _fill(res.body, origin)
        headers = {"Content-Type": res.content_type} if res.content_type else {}
        if res.location is not None:
            headers["Location"] = _fill(res.location.encode(), origin).decode()
        return web.Response(status=res.status, body=body, headers=headers)


def _served_origin(request: web.Request) -> str:
    """The origin of the socket the request came in on, for absolute links."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    if sockname:
        return f"{request.scheme}://{sockname[0]}:{sockname[1]}"
    return f"{request.scheme}://{request.host}"


def _send_raw(request: web.Request, data: bytes, *, reset: bool = False) -> web.StreamResponse:
    """Write raw bytes (possibly none) and close the connection without a real response.

    The returned response is never sent: preparing it on the closed transport raises
    ConnectionResetError inside aiohttp, which it treats as a client that went away and
    logs only at debug level.  Its status (444, as nginx uses for "closed without a
    response") shows up in the access log.
    """
    transport = request.transport
    if transport is not None and not transport.is_closing():
        if data:
            transport.write(data)
        if reset:
            # SO_LINGER with a zero timeout makes close() send RST instead of FIN.
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        else:
            transport.close()
    return web.Response(status=444)


async def _send_huge(request: web.Request) -> web.StreamResponse:
    """Stream a 20 MB body in chunks; stop quietly when the client hangs up."""
    response = web.StreamResponse(status=200, headers={"Content-Type": _HTML})
    response.content_length = HUGE_SIZE
    chunk = (b"<p>" + b"huge " * (_HUGE_CHUNK // 5))[:_HUGE_CHUNK]
    try:
        await response.prepare(request)
        for _ in range(HUGE_SIZE // _HUGE_CHUNK):
            await response.write(chunk)
    except ConnectionError:
        pass  # the crawler stopped reading at its cap, as it should
    return response


# --------------------------------------------------------------------------- serving


@dataclass
class _ServerState:
    """What the server thread hands back to the thread that started it."""

    ready: threading.Event = field(default_factory=threading.Event)
    url: str = ""
    error: BaseException | None = None
    loop: asyncio.AbstractEventLoop | None = None
    stop: asyncio.Event | None = None


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


async def _run_server(site: Site, port: int, state: _ServerState, tls: ServerTLS | None) -> None:
    """Serve until told to stop, then clean up; runs in the server thread's loop."""
    state.loop = asyncio.get_running_loop()
    state.stop = asyncio.Event()
    # A short shutdown timeout bounds cleanup even if a handler ignores cancellation.
    runner = web.AppRunner(site.make_app(), shutdown_timeout=0.5)
    try:
        await runner.setup()
        context = tls.context if tls else None
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        bound_port = runner.addresses[0][1]
        state.url = f"{'https' if tls else 'http'}://127.0.0.1:{bound_port}/"
    except BaseException as exc:
        state.error = exc
        state.ready.set()
        await runner.cleanup()
        return
    state.ready.set()
    try:
        await state.stop.wait()
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def serve(site: Site, port: int = 0, *, tls: ServerTLS | None = None) -> Iterator[str]:
    """Serve the site from a daemon thread with its own event loop on 127.0.0.1.

    Yields the base URL "http://127.0.0.1:PORT/", or "https://127.0.0.1:PORT/" with
    ``tls`` (see :func:`local_tls`).  On exit the runner is cleaned up, the loop stopped
    and the thread joined, so the port is closed afterwards.  A thread is needed because
    stages 1 and 2 block the calling thread in their own select loop.
    """
    state = _ServerState()
    thread = threading.Thread(
        target=lambda: asyncio.run(_run_server(site, port, state, tls)),
        name="testsite",
        daemon=True,
    )
    thread.start()
    state.ready.wait()
    if state.error is not None:
        thread.join()
        raise state.error
    try:
        yield state.url
    finally:
        assert state.loop is not None and state.stop is not None
        state.loop.call_soon_threadsafe(state.stop.set)
        thread.join()


def add_site_arguments(parser: argparse.ArgumentParser, *, port: int) -> None:
    """Add the options that define a site (and its port) to a command line."""
    parser.add_argument("--pages", type=int, default=300, help="number of normal pages")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the site")
    parser.add_argument("--fanout", type=int, default=5, help="links per page")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=port, help="port (0: any free port)")
    parser.add_argument("--no-traps", action="store_true", help="serve plain pages only")
    parser.add_argument("--hostile", action="store_true", help="add misbehaving pages")
    parser.add_argument("--wide", type=int, default=0, help="number of slow /wide/ pages")
    parser.add_argument("--wide-delay", type=float, default=0.0, help="delay of /wide/ pages")
    parser.add_argument(
        "--robots", choices=ROBOTS_KINDS, help="what /robots.txt answers (default: a 404)"
    )


def site_from_arguments(args: argparse.Namespace) -> Site:
    """Build the Site that options added by :func:`add_site_arguments` describe."""
    return Site(
        args.pages,
        args.seed,
        args.fanout,
        latency=args.latency,
        traps=not args.no_traps,
        hostile=args.hostile,
        wide=args.wide,
        wide_delay=args.wide_delay,
        robots=args.robots,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a site in the foreground for a classroom until Ctrl-C."""
    parser = argparse.ArgumentParser(description="Serve the crawler test site on 127.0.0.1.")
    add_site_arguments(parser, port=8080)
    parser.add_argument(
        "--https", action="store_true", help="serve https, with a throw-away CA (needs trustme)"
    )
    args = parser.parse_args(argv)
    site = site_from_arguments(args)
    # The access log lets the class watch the crawler's requests arrive.
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="testsite-") as directory:
        tls = local_tls(directory) if args.https else None
        with serve(site, args.port, tls=tls) as url:
            count = len(site.expected(url))
            print(f"Serving {count} URLs at {url}  (Ctrl-C to stop)", flush=True)
            if tls is not None:
                print(f"Its CA certificate: {tls.cafile}  (crawl with --cafile)", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\nStopping.", flush=True)


if __name__ == "__main__":
    main()
