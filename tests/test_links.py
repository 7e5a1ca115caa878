"""The fast paths of URL handling against the general path, and the link parser's corners.

shared/urls.py answers the common spellings of a URL with a regular expression and
string slicing, and everything else through urllib.parse.  Both must give the same
answer for every string, or a crawl's records would depend on which path a link took:
these tests generate many thousands of URLs, most of them odd on purpose, and compare.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

import shared.urls
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
    """What parse_links did before the fast path: urljoin, then the general normalize."""
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
