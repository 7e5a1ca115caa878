"""The fast paths of URL handling against the general path; the link parser's corners.

shared/urls.py answers the common spellings of a URL with a regular expression and
string slicing, and everything else through urllib.parse.  Both must give the same
answer for every string, or a crawl's records would depend on which path a link took:
these tests generate many thousands of URLs, most of them odd on purpose, and compare.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

import shared.urls
from shared.links import parse_links
from shared.urls import SCHEMES, BaseUrl, UrlRules, _normalize, normalize

# Pieces that URLs are made of: for each part, plain spellings (which the fast paths
# take) and odd ones, which they must refuse or get right: dot segments, ";", "//",
# default and invalid ports, escapes, case, spaces, controls, user names, IPv6.
PLAIN = {
    "scheme": ["http://", "https://"],
    "host": ["h", "example.com", "www.example.com", "127.0.0.1", "h.", "xn--caf-dma.fr"],
    "port": ["", "", ":8080", ":65535"],
    "segment": ["a", "b", "B", "x.html", "~u", "%7E", "!$&'()*+,=", "-_", "a:b", "@", "%zz"],
    "query": ["", "?q=1", "?q=1&r=2", "?a=b?c", "?;x", "?/a"],
    "fragment": ["", "#", "#f", "#f g", "#\u00e9", "#a#b", "#\n"],
}
ODD = {
    "scheme": ["HTTP://", "Https://", "ftp://", "//", "", "http:", "mailto:", " http://"],
    "host": ["WWW.Example.com", "[::1]", "[::1", "h_x", "user@h", "u:p@h", "caf\u00e9.fr", ""],
    "port": [":80", ":443", ":0", ":080", ":65536", ":", ":x", ":99999"],
    "segment": [
        *[".", "..", "", ".hidden", "a;p", "a;", ";", "%2e", "a b", "\u00e9", "\t", "a\nb"],
        *["[x]", "|", "\\", "a#b", "a?b", "\x00"],
    ],
    "query": ["?", "?q=a b", "?q=\u00e9", "?#", "?q=\t"],
    "fragment": [],
}


def _pick(rng: random.Random, part: str) -> str:
    odd = ODD[part]
    return rng.choice(odd if odd and rng.random() < 0.15 else PLAIN[part])


def _path(rng: random.Random) -> str:
    return "/".join(_pick(rng, "segment") for _ in range(rng.randint(0, 4)))


def urls(rng: random.Random, count: int) -> Iterator[str]:
    """Absolute and relative URL-like strings, mostly well-formed, many subtly not."""
    for _ in range(count):
        shape = rng.random()
        path = _path(rng)
        tail = _pick(rng, "query") + _pick(rng, "fragment")
        if shape < 0.45:
            netloc = _pick(rng, "host") + _pick(rng, "port")
            yield _pick(rng, "scheme") + netloc + "/" * (rng.random() < 0.95) + path + tail
        elif shape < 0.65:
            yield "/" + path + tail
        elif shape < 0.9:
            yield path + tail
        else:
            yield rng.choice([" ", "", "\t"]) + _pick(rng, "query") + _pick(rng, "fragment")


BASES = [
    "http://h/",
    "http://h/dir/page",
    "http://h/dir/",
    "https://h:8443/a/b?q=1",
    "http://h/a//b/c",
    "http://h/a;p/b;",
    "http://h/d/x;",
    "http://h/d/x?",
    "HTTP://H/x",
    "http://h",
    "http://h/./a",
    "http://h/a#f",
    "http://h:80/x",
    "http://[::1]:8/x",
    "http://user@h/x",
    "http://h/%7e/",
    "https://h/a/b.html?x=1&y=2#top",
]


def reference_join(base: str, link: str) -> str | None:
    """What parse_links did before the fast path: urljoin, then the general normalize; and
    no URL for an http link whose authority is empty (RFC 9110, 4.2.1: "http:///x")."""
    if re.match(r"(?i)https?:///", link.strip()):
        return None
    try:
        return _normalize(urljoin(base, link.strip()))
    except ValueError:
        return None


def reference_allowed(rules: UrlRules, url: str) -> bool:
    """What UrlRules.allowed did before its fast path: urlsplit every URL."""
    if rules.exclude is not None and rules.exclude.search(url):
        return False
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        return False
    return rules.host_allowed(parts.hostname)


class Counted:
    """Count the calls of the general path, to know that both paths were compared."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.function(*args)


def outcome(function: Callable[..., Any], *args: Any) -> Any:
    """What a call returns, or the type of what it raises (urlsplit raises on "http://[")."""
    try:
        return function(*args)
    except ValueError as exc:
        return type(exc)


def test_normalize_fast_path_agrees_with_the_general_one(monkeypatch: pytest.MonkeyPatch) -> None:
    general = Counted(_normalize)
    monkeypatch.setattr(shared.urls, "_normalize", general)
    count = 20000
    for url in urls(random.Random(1), count):
        assert normalize(url) == _normalize(url), url
    assert count * 0.1 < general.calls < count * 0.9  # both paths taken, often


@pytest.mark.parametrize("seed", [2, 3])
def test_joining_fast_path_agrees_with_urljoin_and_normalize(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    general = Counted(urljoin)
    monkeypatch.setattr(shared.urls, "urljoin", general)
    rng = random.Random(seed)
    bases = BASES + [u for u in urls(rng, 300) if normalize(u)]
    count = 15000
    for link in urls(rng, count):
        base = rng.choice(bases)
        assert BaseUrl(base).join(link) == reference_join(base, link), (base, link)
    assert count * 0.1 < general.calls < count * 0.9


@pytest.mark.parametrize("strict", [True, False])
def test_scope_fast_path_agrees_with_urlsplit(strict: bool) -> None:
    rng = random.Random(4)
    rules = UrlRules(["http://www.example.com/", "http://127.0.0.1:8080/"], strict=strict)
    candidates = list(urls(rng, 10000))
    candidates += [u for u in map(normalize, candidates) if u is not None]
    for url in candidates:
        assert outcome(rules.allowed, url) == outcome(reference_allowed, rules, url), url


# --- the same, generated by hypothesis ---------------------------------------------------

# Unreserved characters, some reserved ones, "%" and one non-ASCII letter: escapes are made
# of them, spelled in either case, and so are "%" that start none.
_ESCAPABLE = "aZ09-._~/?#:@!$&'()*+,;=% \u00e9"


def _escaped(char: str, upper: bool) -> str:
    """char percent-encoded as UTF-8, its hex digits in upper or lower case."""
    escape = "".join(f"%{byte:02X}" for byte in char.encode())
    return escape if upper else escape.lower()


@st.composite
def _pieces(draw: st.DrawFn) -> str:
    """A piece of a path or query: plain characters and escapes, in either case."""
    out = []
    for _ in range(draw(st.integers(0, 6))):
        char = draw(st.sampled_from(_ESCAPABLE))
        kind = draw(st.sampled_from(["raw", "raw", "upper", "lower", "percent"]))
        if kind == "raw":
            out.append(char)
        elif kind == "percent":  # a "%" before a plain character or an escape of one
            out.append("%" + char)
        else:
            out.append(_escaped(char, kind == "upper"))
    return "".join(out)


#: Labels of a host: plain, at the 63-character bound and past it, odd characters.
_LABELS = st.sampled_from(
    [
        *["h", "example", "com", "www", "Ex", "a" * 63, "a" * 64, "A" * 64, "x-y", "a_b"],
        *["%41", "", "a\\b", "caf\u00e9", "127", "0"],
    ]
)


@st.composite
def generated_urls(draw: st.DrawFn) -> str:
    """Absolute URLs: hosts of up to 300 characters, paths and queries full of escapes."""
    labels = draw(st.lists(_LABELS, min_size=1, max_size=6))
    host = ".".join(labels)
    if draw(st.booleans()):  # long hosts, around the 253-character bound
        host = ".".join(["a" * 50] * draw(st.integers(3, 5))) + "." + host
    segments = draw(st.lists(st.one_of(_pieces(), st.sampled_from([".", "..", "%2e", "%2E%2e"]))))
    query = draw(st.one_of(st.just(""), _pieces().map(lambda q: "?" + q)))
    scheme = draw(st.sampled_from(["http://", "https://", "HTTP://"]))
    port = draw(st.sampled_from(["", "", ":8080", ":80"]))
    return scheme + host + port + "/" + "/".join(segments) + query


@st.composite
def respelled(draw: st.DrawFn, url: str) -> str:
    """url with some of its path's and query's unreserved characters escaped, and the
    hex digits of some of its escapes in the other case: another spelling of the same URL."""
    head, sep, tail = url.partition("://")
    host, slash, rest = tail.partition("/")
    out = []
    for token in re.findall(r"%[0-9A-Fa-f]{2}|.", rest, re.DOTALL):
        if len(token) == 3 and draw(st.booleans()):
            out.append(token.swapcase())  # "%7e" for "%7E": the same escape
        elif token in "aZ09-._~" and draw(st.booleans()):
            out.append(_escaped(token, draw(st.booleans())))
        else:
            out.append(token)
    return head + sep + host + slash + "".join(out)


#: 1,500 URLs on the first Python of a run; on the others (the noxfile sets the wire
#: parser's quick profile there, tests/test_httpwire_reference.py) 250: the normaliser is
#: plain Python, and what a version changes in urllib.parse shows in the first few hundred.
URL_EXAMPLES = 250 if os.environ.get("HYPOTHESIS_PROFILE") == "wire-quick" else 1500
URL_PROPERTIES = settings(
    max_examples=URL_EXAMPLES,
    derandomize=True,
    database=None,  # the same examples every run, and no .hypothesis/ directory
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@URL_PROPERTIES
@given(generated_urls())
def test_generated_urls_take_either_path_to_one_answer(url: str) -> None:
    """The fast path's answer is the general path's, or both refuse; and it is a fixed point."""
    normal = normalize(url)
    assert normal == _normalize(url)
    if normal is not None:
        assert normalize(normal) == normal == _normalize(normal)
        for base in ("http://h/dir/page", "https://h:8443/a/b?q=1"):
            link = normal.partition("://")[2].partition("/")[2]  # its path and query
            assert BaseUrl(base).join(link) == reference_join(base, link)
            assert BaseUrl(base).join("/" + link) == reference_join(base, "/" + link)


@URL_PROPERTIES
@given(st.data())
def test_spellings_of_one_url_normalize_to_one(data: st.DataObject) -> None:
    """Escaping an unreserved character, or changing an escape's case, names the same page."""
    url = data.draw(generated_urls())
    other = data.draw(respelled(url))
    assert normalize(other) == normalize(url), other


# --- the link parser's corners ------------------------------------------------------------


def test_libxml2_tokenizes_as_html5() -> None:
    # libxml2 2.14 brought the HTML5 tokenizer the corners below rely on; an lxml built
    # against an older libxml2 of the system would read them otherwise.
    assert etree.LIBXML_VERSION >= (2, 14), etree.LIBXML_VERSION


def test_text_elements_and_comments_hold_no_links() -> None:
    html = """<title>Go <a href=/t>here</a></title><textarea><a href=/ta></textarea>
    <script>document.write('<a href=/s>')</script><style>a{}</style><a href=/style-after>
    <iframe src=/frame><a href=/in-iframe></iframe><!-- <a href=/comment> --!><a href=/ok>"""
    assert parse_links("http://h/", html) == {
        "http://h/style-after",
        "http://h/frame",
        "http://h/ok",
    }


def test_entity_names_in_a_query_are_not_decoded_without_a_semicolon() -> None:
    # "&times", "&reg", "&copy" are entities a browser decodes in text, but not in an
    # attribute when a letter, a digit or "=" follows: they are query parameters.
    html = '<a href="/s?a=1&timestamp=2&region=eu&copy=3&amp;b=4&lt;c">'
    assert parse_links("http://h/", html) == {"http://h/s?a=1&timestamp=2&region=eu&copy=3&b=4%3Cc"}


def test_a_feeds_cdata_sections_are_text_but_its_elements_count() -> None:
    feed = """<?xml version="1.0"?><rss><channel><item>
    <description><![CDATA[<p>Quoted HTML: <a href="/quoted">not the feed's</a></p>]]></description>
    <link>/text-not-href</link><atom:link href="/prefixed"/></item>
    <a href="/after-cdata">one</a><link href="/linked"/></channel></rss>"""
    assert parse_links("http://h/feed", feed) == {"http://h/after-cdata", "http://h/linked"}


def test_the_first_of_two_equal_attributes_counts() -> None:
    assert parse_links("http://h/", "<a href=/first href=/second>") == {"http://h/first"}


def test_a_frame_outside_a_frameset_still_counts() -> None:
    # HTML5's tree builder drops it; a crawler should still follow it (a trap page has one).
    assert parse_links("http://h/", "<body><FRAME SRC=/f><p>x") == {"http://h/f"}


def test_deeply_nested_unclosed_tags_lose_no_link() -> None:
    # Past 512 levels and after end tags that close nothing (shared/links.py leaves those
    # out), a link is still found, and a script's text is still no tag.
    html = "<div><b>" * 5000 + "</i>" * 100 + "<a href=/deep>deep</a>"
    html += "<script>'<a href=/no>'</script><a href=/after>"
    assert parse_links("http://h/", html) == {"http://h/deep", "http://h/after"}


def test_the_first_base_with_an_href_counts_and_an_empty_one_means_the_page() -> None:
    assert parse_links("http://h/p/q", "<base target=x><base href=/b/><a href=x>") == {
        "http://h/b/x"
    }
    assert parse_links("http://h/p/q", '<base href=""><base href=/b/><a href=x>') == {
        "http://h/p/x"
    }


def test_a_lone_surrogate_does_not_raise() -> None:
    assert parse_links("http://h/", "\ud800<a href=/after>") == {"http://h/after"}


def test_parsing_in_many_threads_gives_the_same_links() -> None:
    # The threaded baseline parses pages in many threads at once.
    pages = [f"<p>{i}</p>" + "".join(f"<a href=/p/{i}/{j}>" for j in range(20)) for i in range(400)]
    expected = [parse_links("http://h/", page) for page in pages]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda page: parse_links("http://h/", page), pages))
    assert got == expected
    assert all(len(links) == 20 for links in got)
