"""The traps: pages that show a crawler what the real web does, and what robots.txt says.

**To add a trap**, define its page here, in :func:`trap_pages`, with the helpers of
pages.py (``html_page``, ``leaf``, ``redirect``, ``inert``); link to it from the hub
(``hub_targets``) or from another trap page; name it in :data:`TRAPS` if tests should
find it by name.  A page that answers normally needs nothing else: the server renders
it and the oracle predicts its record from the same definition.  A new way to
*misbehave* (no answer, a reset, a lie about the length) is a new ``kind``: answer it
in server.py's ``answer`` and, if every try fails, add it to :data:`FAILING_KINDS`.

Keep the oracle's one invariant (see oracle.py): a URL that answers with a redirect is
reachable by exactly one path.

robots.txt
----------
A crawl begins with ``/robots.txt``, so the oracle has a record for it: a 404 unless
the site serves one.  With ``robots="rules"`` it serves :data:`ROBOTS_TXT`, which
forbids the paths starting with one of :data:`DISALLOWED` (the private trap pages and,
robots.txt rules being prefixes, ``/p/7``, ``/p/70`` .. ``/p/79`` and so on).  The
oracle decides from :data:`DISALLOWED` itself, not by parsing the file: a forbidden URL
it reaches gets a record with no tries, and its links are never found.  ``"silent"``,
``"garbage"`` and ``"broken"`` robots.txt files answer nothing, random bytes and a 500:
each allows everything.  ``"bad-delay"`` and ``"bad-path"`` serve :data:`ROBOTS_TXT` with
one line more that ``urllib.robotparser`` raised on (:data:`UNREADABLE_LINES`): the parser
ignores it and the rest is obeyed, as for ``"rules"``.  :data:`RFC_KINDS` holds one
robots.txt for each rule of RFC 9309 (longest match, ``*``, ``$``, merged groups, a tie,
blank lines, a byte order mark), each with the paths it forbids written in plain Python:
the oracle decides from :data:`FORBIDS`, never by parsing a file.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from functools import cache
from urllib.parse import unquote

from shared.testsite.pages import (
    HTML,
    NEVER,
    WORDS,
    Resource,
    html_page,
    inert,
    leaf,
    redirect,
)

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

#: Hostile page name -> path (present with ``hostile=True``).
HOSTILE: dict[str, str] = {
    name: f"/hostile/{name}"
    for name in ("silent", "reset", "short", "garbage", "huge", "binary", "hangup-kept")
}
#: The pages the hangup-kept page links to, answered the same way: a client that keeps
#: connections alive sends one of them on a connection whose next request is hung up on.
HANGUP_KEPT_PAGES = tuple(f"{HOSTILE['hangup-kept']}/{n}" for n in range(1, 4))

#: Path prefixes that the site's robots.txt forbids (with ``robots="rules"``).
DISALLOWED = ("/traps/private/", "/p/7")


def robots_txt(extra: str = "") -> str:
    """A robots.txt with a group for some other crawler, which ours must not obey, and the
    group for everyone else, which it must; ``extra`` is a line put first in that group."""
    return (
        "# robots.txt of the crawler500 test site\n"
        "User-agent: SomeOtherBot\n"
        "Disallow: /\n"
        "\n"
        "User-agent: *\n" + extra + "".join(f"Disallow: {prefix}\n" for prefix in DISALLOWED)
    )


#: The robots.txt served with ``robots="rules"``.
ROBOTS_TXT = robots_txt()

#: robots.txt kind -> the one line of its file that ``urllib.robotparser`` (the parser the
#: crawlers used before Protego) raised on, put before the rules of :data:`ROBOTS_TXT`.
UNREADABLE_LINES = {
    "bad-delay": "Crawl-delay: \u00b2",  # a digit to str.isdigit(), none to int(): ValueError
    "bad-path": "Disallow: http://[::1",  # a rule read as a URL, whose [ never closes
}


def forbids_disallowed(path: str) -> bool:
    """The paths :data:`ROBOTS_TXT` forbids: those under a prefix of :data:`DISALLOWED`."""
    return path.startswith(DISALLOWED)


#: One robots.txt for each rule of RFC 9309, kind -> (its file, the paths it forbids us),
#: the paths written in plain Python, the way a reader of the RFC decides them, so the
#: oracle never parses a robots.txt.  Each forbids /traps/private/ one way or another.
RFC_KINDS: dict[str, tuple[str, Callable[[str], bool]]] = {
    # 2.2.2: the longest match wins, wherever it stands; ``Allow: /`` first changes nothing.
    "longest": (
        "User-agent: *\nAllow: /\nDisallow: /traps/private/\nDisallow: /p/7\nAllow: /p/77\n",
        lambda path: forbids_disallowed(path) and not path.startswith("/p/77"),
    ),
    # 2.2.3: ``*`` stands for any characters, here after the first slash.
    "wildcard": (
        "User-agent: *\nDisallow: /*/private/\nDisallow: /*.pdf\n",
        lambda path: "/private/" in path[1:] or ".pdf" in path[1:],
    ),
    # 2.2.3: a closing ``$`` matches the end of the path: /p/1, not /p/10.
    "anchored": (
        "User-agent: *\nDisallow: /traps/private/$\nDisallow: /*.json$\nDisallow: /p/1$\n",
        lambda path: path in ("/traps/private/", "/p/1") or path.endswith(".json"),
    ),
    # 2.2.1: the groups naming the same agent are one group; ``*`` is not ours.
    "merged": (
        "User-agent: crawler500\nDisallow: /traps/private/\n\nUser-agent: *\nDisallow: /\n\n"
        "User-agent: crawler500\nDisallow: /p/7\n",
        forbids_disallowed,
    ),
    # 2.2.2: an Allow and a Disallow of equal length: the Allow wins, whatever the order.
    "tie": (
        "User-agent: *\nDisallow: /traps/private/\nDisallow: /p/7\nAllow: /p/7\n",
        lambda path: path.startswith("/traps/private/"),
    ),
    # 2.2: a blank line ends no group (urllib.robotparser dropped the group, so all of it).
    "blank-lines": (
        "User-agent: *\n\nDisallow: /traps/private/\n\nDisallow: /p/7\n",
        forbids_disallowed,
    ),
    # A UTF-8 file that starts with a byte order mark, which is no part of the first line.
    "bom": ("\ufeffUser-agent: *\nDisallow: /traps/private/\nDisallow: /p/7\n", forbids_disallowed),
}

#: What ``Site(robots=...)`` may serve at /robots.txt (None, the default: a 404).
ROBOTS_KINDS = ("rules", "silent", "garbage", "broken", *UNREADABLE_LINES, *RFC_KINDS)

#: The kinds whose rules a crawler obeys -> the paths they forbid it.
FORBIDS: dict[str, Callable[[str], bool]] = {
    "rules": forbids_disallowed,
    **dict.fromkeys(UNREADABLE_LINES, forbids_disallowed),
    **{kind: forbids for kind, (_, forbids) in RFC_KINDS.items()},
}

#: The kinds whose rules a crawler obeys.
OBEYED_KINDS = frozenset(FORBIDS)

#: Hostile kinds that never give a complete response: every try fails ("wire-error":
#: hostile_wire.py's WIRE_ERROR).
FAILING_KINDS = frozenset({"silent", "reset", "short", "garbage", "wire-error"})

#: Size of the hostile huge body, twice the crawlers' 10 MiB cap.
HUGE_SIZE = 20 * 1024 * 1024


def big_page() -> Resource:
    """A page of about 1 MB with links at its start, middle and end."""
    paragraph = ("<p>" + " ".join(WORDS) + "</p>\n").encode()
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
    return Resource(body=body, links=("/traps/big/1", "/traps/big/2", "/traps/big/3"))


@cache
def trap_pages() -> dict[str, Resource]:
    """Build the trap pages once; they do not depend on the seed."""
    t: dict[str, Resource] = {}
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
    t["/traps/"] = html_page(
        "Traps",
        f'<ul>\n{items}</ul>\n<p><a href="../">home</a></p>',
        [TRAPS[name] for name in hub_targets] + ["/"],
    )

    # One target spelled many ways; all of them count once.
    t["/traps/dir/spellings"] = html_page(
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
    t["/traps/dir/a"] = leaf("Spelled target a")
    t["/traps/dir/b"] = leaf("Spelled target b")
    t["/traps/target"] = leaf("Parent-directory target")

    # The query string is part of a page's identity.
    t["/traps/query"] = html_page(
        "Query strings",
        """<p><a href="/search?q=1">one</a> <a href="/search?q=2">two</a>
<a href="/search?q=1#results">one again</a> <a href="{origin}/search?q=2">two again</a>
<a href="/search?q=a b">a space in the query</a> <a href="/search">no query</a></p>""",
        ["/search?q=1", "/search?q=2", "/search?q=a%20b", "/search"],
    )
    for query in ("q=1", "q=2", "q=a%20b", ""):
        path = "/search?" + query if query else "/search"
        title = f"Search {unquote(query) or '(empty)'}"
        t[path] = html_page(title, '<p><a href="/traps/query">back</a></p>', ["/traps/query"])

    # <base href> changes what relative links mean (but not root-relative ones).
    t["/traps/base"] = Resource(
        body=b"""<!DOCTYPE html>
<html><head><base href="{origin}/traps/based/"><title>Base</title></head><body>
<p><a href="x">x under the base</a> <a href="./y#frag">y under the base</a>
<a href="../target">parent of the base</a> <a href="/traps/">root-relative</a></p>
</body></html>
""",
        links=("/traps/based/x", "/traps/based/y", "/traps/target", "/traps/"),
    )
    t["/traps/based/x"] = leaf("Based x")
    t["/traps/based/y"] = leaf("Based y")

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
    t["/traps/malformed"] = Resource(
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
        t[f"/traps/m/{name}"] = leaf(f"Malformed target {name}")

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
    t["/traps/redirects"] = html_page(
        "Redirects",
        "\n".join(f'<p><a href="{path}">{path}</a></p>' for path in redirect_links),
        redirect_links,
    )
    t["/r/300"] = redirect(300, "./../traps/land/300", "/traps/land/300")
    t["/r/301"] = redirect(301, "{origin}/traps/land/301", "/traps/land/301", "text/plain")
    t["/r/302"] = redirect(302, "../traps/land/302", "/traps/land/302")
    t["/r/303"] = redirect(303, "/traps/land/303", "/traps/land/303")
    t["/r/307"] = redirect(307, "//{netloc}/traps/land/307", "/traps/land/307")
    t["/r/308"] = redirect(308, "{SCHEME}://{netloc}/traps/land/308#frag", "/traps/land/308")
    for status in (300, 301, 302, 303, 307, 308):
        t[f"/traps/land/{status}"] = leaf(f"Landed from a {status}")
    t["/r/away"] = redirect(302, "http://other.example/elsewhere", "http://other.example/elsewhere")
    t["/r/self"] = redirect(302, "/r/self", "/r/self")
    t["/r/join-a"] = redirect(301, "/traps/joined", "/traps/joined")
    t["/r/join-b"] = redirect(307, "{origin}/traps/joined#x", "/traps/joined")
    t["/traps/joined"] = leaf("Where two redirects join")
    t["/r/cycle/1"] = redirect(302, "/r/cycle/2", "/r/cycle/2")
    t["/r/cycle/2"] = redirect(302, "1", "/r/cycle/1")
    for hop in range(CHAIN_LENGTH):
        t[f"/r/chain/{hop}"] = redirect(302, f"/r/chain/{hop + 1}", f"/r/chain/{hop + 1}")
    t[f"/r/chain/{CHAIN_LENGTH}"] = leaf("End of the long chain")

    # Errors: a 404 (any undefined path), a 500 and a page that drops the connection.
    t["/traps/errors"] = html_page(
        "Errors",
        '<p><a href="missing">404</a> <a href="broken">500</a> <a href="flaky">flaky</a></p>',
        ["/traps/missing", "/traps/broken", "/traps/flaky"],
    )
    t["/traps/broken"] = Resource(
        status=500,
        body=f'<html><body>Oops. <a href="{NEVER}500">not parsed</a></body></html>'.encode(),
    )
    # The connection is dropped on the first two requests (counted per path, see reset()).
    flaky = html_page("Flaky", '<p><a href="after-flaky">after</a></p>', ["/traps/after-flaky"])
    t["/traps/flaky"] = dataclasses.replace(flaky, drops=2)
    t["/traps/after-flaky"] = leaf("Reached through the flaky page")

    # Bodies fetched but never parsed, though they contain href= bytes.
    t["/traps/media"] = html_page(
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
    t["/traps/image.png"] = inert(
        "image/png",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
        b'\x00\x1f\x15\xc4\x89 <a href="/traps/never/png">\x00\x00\x00\x00IEND\xaeB`\x82',
    )
    t["/traps/doc.pdf"] = inert(
        "application/pdf",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n"
        b'% <a href="/traps/never/pdf"> href=/traps/never/pdf2\n%%EOF\n',
    )
    t["/traps/style.css"] = inert(
        "text/css",
        b'a { background: url(/traps/never/css); } /* <a href="/traps/never/css2"> */\n',
    )
    t["/traps/data.json"] = inert(
        "application/json",
        b'{"href": "/traps/never/json", "html": "<a href=\\"/traps/never/json2\\">"}\n',
    )
    t["/traps/notes.txt"] = inert(
        "text/plain; charset=utf-8", b'Plain text is not parsed: <a href="/traps/never/text">\n'
    )

    # XML flavours are parsed: the link parser sees <link> and <a> as tags.
    t["/traps/sitemap.xml"] = Resource(
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
    t["/traps/page.xhtml"] = Resource(
        content_type="application/xhtml+xml; charset=utf-8",
        body=b"""<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>XHTML</title>
<link rel="next" href="xml/3"/></head>
<body><p><a href="/traps/">hub</a></p></body></html>
""",
        links=("/traps/xml/3", "/traps/"),
    )
    t["/traps/feed.xml"] = Resource(
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
        t[f"/traps/xml/{n}"] = leaf(f"Linked from XML {n}")

    # Links that are never fetched: other hosts, other schemes, invalid URLs.
    t["/traps/foreign"] = html_page(
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
    t["/traps/latin1"] = Resource(
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
    t["/caf%C3%A9"] = leaf("Caf\u00e9")
    t["/traps/meta-charset"] = Resource(
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
    t["/traps/na%C3%AFve"] = leaf("Na\u00efve")
    t["/traps/http-equiv"] = Resource(
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
    t["/traps/%E2%82%AC"] = leaf("Euro")
    t["/traps/bad-utf8"] = Resource(
        body=b"""<html><head><title>Bad UTF-8</title></head><body>
<p><a href="/traps/garbage/1">before the garbage</a></p>
<p>\xff\xfe\xfd broken \xc3\x28 bytes \xe2\x82 here \x80\x81</p>
<p><a href="garbage/2">after the garbage</a></p>
</body></html>
""",
        links=("/traps/garbage/1", "/traps/garbage/2"),
    )
    t["/traps/garbage/1"] = leaf("Before the garbage")
    t["/traps/garbage/2"] = leaf("After the garbage")

    t["/traps/big"] = big_page()
    for n in range(1, 4):
        t[f"/traps/big/{n}"] = leaf(f"Linked from the big page {n}")

    # Pages that robots.txt forbids when the site serves one; ordinary pages otherwise.
    t["/traps/private/"] = html_page(
        "Private",
        '<p><a href="page">a private page</a> <a href="/traps/">back</a></p>',
        ["/traps/private/page", "/traps/"],
    )
    t["/traps/private/page"] = leaf("A private page")

    # A response without a Content-Type header: recorded, not parsed.
    t["/traps/no-type"] = Resource(
        kind="raw",
        content_type=None,
        encoding=None,
        body=f'<html><body><a href="{NEVER}no-type">untyped</a></body></html>\n'.encode(),
    )
    return t


@cache
def binary_body() -> bytes:
    """Deterministic random bytes with no "<", so no parser can find a tag in them."""
    return random.Random(20240601).randbytes(64 * 1024).replace(b"<", b"?")


def robots_page(kind: str) -> Resource:
    """What /robots.txt answers with ``Site(robots=kind)``."""
    if kind == "rules":
        body = ROBOTS_TXT.encode()
        return Resource(content_type="text/plain; charset=utf-8", body=body, encoding=None)
    if kind == "silent":
        return Resource(kind="silent", content_type=None)
    if kind == "garbage":  # a 200 whose body holds no rule at all
        return Resource(content_type="text/plain", body=binary_body(), encoding=None)
    if kind in UNREADABLE_LINES:
        body = robots_txt(UNREADABLE_LINES[kind] + "\n").encode()
        return Resource(content_type="text/plain; charset=utf-8", body=body, encoding=None)
    if kind in RFC_KINDS:
        body = RFC_KINDS[kind][0].encode()
        return Resource(content_type="text/plain; charset=utf-8", body=body, encoding=None)
    if kind == "broken":
        return Resource(status=500, body=b"<html><body>robots.txt is broken</body></html>\n")
    raise ValueError(f"robots must be None or one of {', '.join(ROBOTS_KINDS)} (got {kind!r})")


def hostile_pages() -> dict[str, Resource]:
    """The hostile pages; only ``kind`` matters for most of them."""
    found: dict[str, Resource] = {}
    for name, path in HOSTILE.items():
        if name == "binary":
            found[path] = Resource(kind=name, content_type="text/html", body=binary_body())
        elif name == "huge":
            found[path] = Resource(kind=name, content_type=HTML)
        elif name == "hangup-kept":
            # An ordinary page, whose connection stays open after it (unless the request
            # said Connection: close): the next request on it is read, counted, and met
            # with a close (server.py).  A server may do so (RFC 9112, section 9.6); the
            # request was seen, so sending it again is a try, in every stage.
            links = [p.removeprefix(path + "/") for p in HANGUP_KEPT_PAGES]
            inner = "".join(f'<p><a href="hangup-kept/{link}">{link}</a></p>' for link in links)
            page = html_page("Kept alive, then hung up", inner, HANGUP_KEPT_PAGES)
            found[path] = dataclasses.replace(page, kind=name)
            for child in HANGUP_KEPT_PAGES:
                page = html_page(f"Kept alive {child[-1]}", "<p>Nothing more.</p>", ())
                found[child] = dataclasses.replace(page, kind=name)
        else:
            found[path] = Resource(kind=name, content_type=None)
    return found
