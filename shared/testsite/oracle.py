"""The oracle: the records a correct crawl of the site must end with, from its definition.

:meth:`Site.expected` walks the site's definition breadth-first, with the crawler's
rules (redirects followed up to ``max_redirect``, ``exclude``, ``max_tries``,
robots.txt), and predicts the record of every URL it reaches.  It never looks at a
crawler's output, nor at what the server answered.

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
  path and :meth:`Site.reset` re-arms it.  It hangs up only on a new connection: a
  request on a kept-alive one is met with a close and never counted, as when a server
  has closed an idle connection, which costs a client that pools no try.
* ``/r/chain/0`` .. ``/r/chain/11`` each redirect to the next and ``/r/chain/12`` is a
  page; with ``max_redirect=10`` the crawl fetches ``/r/chain/0`` .. ``/r/chain/10`` and
  the last record's ``next_url`` is the unfetched ``/r/chain/11``.
* Hostile ``silent``, ``reset``, ``short`` and ``garbage`` fail every try; ``huge`` is
  status 200 with ``error=True`` (the body passes the crawler's 10 MiB cap, so it is not
  decoded: ``encoding`` None); ``binary`` is a parsed text/html page with no links.
* The endless cases (endless.py, ``endless=True``) in ``ENDLESS_FAILING`` fail every try,
  in every stage, whatever each stage gives as the reason; the keep-alive pages are
  ordinary pages in every stage, since a connection the server closed unannounced is
  never the page's fault.
* No correct crawler ever requests a path starting with :data:`NEVER`.
* The wire cases (hostile_wire.py) record what their bytes mean; the few that stage 3
  reads differently record stage 3's reading for it, the reason written beside the case.

The base URL passed to :meth:`Site.expected` must be the one :func:`serve` yields
("http://127.0.0.1:PORT/" or "https://..."): absolute links in the pages are written
with the scheme and address the server is bound to.
"""

from __future__ import annotations

import collections
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from shared.testsite.endless import ENDLESS_FAILING
from shared.testsite.hostile_wire import WIRE_HUGE
from shared.testsite.traps import FAILING_KINDS, FORBIDS

if TYPE_CHECKING:
    from shared.report import CrawlResult, FetchStatistic
    from shared.testsite.site import Site

#: Redirect statuses a crawler follows, and media types it parses (as in shared.responses;
#: restated here so the oracle is defined by the test site alone).
REDIRECT_STATUSES = frozenset({300, 301, 302, 303, 307, 308})
PARSED_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xml", "text/xml"})


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


@dataclass
class Walk:
    """The result of the oracle's breadth-first walk: a record and a depth per URL."""

    records: dict[str, Expected] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)


def media_type(header: str | None) -> str | None:
    """The lower-case media type of a Content-Type header value."""
    if header is None:
        return None
    return header.partition(";")[0].strip().lower() or None


def origin_of(base_url: str) -> str:
    """Return "http://127.0.0.1:PORT" from a base URL, dropping the path and a default port."""
    parts = urlsplit(base_url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    default = {"http": 80, "https": 443}.get(scheme)
    port = parts.port
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


def robots_record(site: Site, max_tries: int) -> Expected:
    """The record of the /robots.txt fetch that begins every crawl that obeys it."""
    res = site.resource("/robots.txt")
    if res.kind in FAILING_KINDS:
        return Expected(None, None, None, None, 0, max_tries, True)
    return Expected(res.status, None, media_type(res.content_type), None, 0, 1, False)


def walk(
    site: Site,
    base_url: str,
    max_redirect: int,
    exclude: str | None,
    max_tries: int,
    ignore_robots: bool,
    stage: str | None = None,
) -> Walk:
    """Walk the definition breadth-first, applying the crawl rules to every URL.

    ``stage`` names the crawler, for the few pages whose record differs by stage.
    """
    origin = origin_of(base_url)
    pattern = re.compile(exclude) if exclude else None
    walk = Walk()
    # robots.txt is fetched first and recorded, but it is no page: it has no depth.
    if not ignore_robots:
        walk.records[origin + "/robots.txt"] = robots_record(site, max_tries)
    # Decided from the site's own definition: the paths its robots.txt forbids, as
    # traps.py writes them in plain Python beside the file.
    forbids = None if ignore_robots or site.robots is None else FORBIDS.get(site.robots)

    def allowed(url: str) -> bool:
        # Every in-site path is in scope by construction; only --exclude can refuse it.
        return pattern is None or not pattern.search(url)

    queue: collections.deque[tuple[str, int]] = collections.deque([("/", max_redirect)])
    walk.depth[origin + "/"] = 0
    while queue:
        path, redirects_left = queue.popleft()
        url = origin + path
        depth = walk.depth[url]
        if forbids is not None and forbids(path):
            walk.records[url] = Expected(None, None, None, None, 0, 0, True)  # skipped
            continue
        res = site.resource_for(path, stage)
        discovered: list[str] = []
        if res.kind in FAILING_KINDS or res.kind in ENDLESS_FAILING or res.drops >= max_tries:
            walk.records[url] = Expected(None, None, None, None, 0, max_tries, True)
            continue
        tries = res.drops + 1
        media = media_type(res.content_type)
        if res.status in REDIRECT_STATUSES and res.target is None:  # a Location that is no URL
            walk.records[url] = Expected(res.status, None, media, None, 0, tries, False)
            continue
        if res.status in REDIRECT_STATUSES:
            assert res.target is not None
            in_site = res.target.startswith("/")
            next_url = origin + res.target if in_site else res.target
            walk.records[url] = Expected(res.status, next_url, media, None, 0, tries, False)
            follow = redirects_left > 0 and in_site and allowed(next_url)
            if follow and next_url not in walk.depth:
                walk.depth[next_url] = depth + 1
                queue.append((res.target, redirects_left - 1))
            continue
        if res.kind in ("huge", WIRE_HUGE):
            # The crawler stops reading at 10 MiB: status and type known, body not decoded.
            walk.records[url] = Expected(200, None, media, None, 0, 1, True)
            continue
        parsed = res.status == 200 and media in PARSED_TYPES
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


def fields(stat: FetchStatistic) -> tuple[object, ...]:
    """What a crawler's record must agree on with the oracle (num_new_urls depends on order)."""
    error = stat.error is not None
    return (
        stat.status,
        stat.next_url,
        stat.content_type,
        stat.encoding,
        stat.num_urls,
        stat.tries,
        error,
    )


def expected_fields(exp: Expected) -> tuple[object, ...]:
    """The oracle's record, in the order of :func:`fields`."""
    return (
        exp.status,
        exp.next_url,
        exp.content_type,
        exp.encoding,
        exp.num_urls,
        exp.tries,
        exp.error,
    )


def assert_matches_oracle(result: CrawlResult, expected: dict[str, Expected]) -> None:
    """Assert that a crawl's page set equals the oracle's, and each record agrees with it.

    The one comparison the suite and the exercises' tests make of a crawl with its site.
    Each message starts with a sentence a one-line report can show: what differs, and the
    crawl's first failed fetches, whose errors most often say why.
    """
    failed = [
        f"{s.url} failed with {s.error}"
        for s in result.fetches
        if s.error and (s.url not in expected or fields(s) != expected_fields(expected[s.url]))
    ]
    why = "; ".join(failed[:2]) if failed else "no fetch failed unforeseen"
    empty = [s.error for s in result.fetches if (s.error or "").startswith("NotImplementedError")]
    assert not empty, f"a function is still empty: {empty[0] if empty else ''}"
    assert len(result.fetches) == len(result.urls), "a URL was recorded twice"
    missing, extra = set(expected) - result.urls, result.urls - set(expected)
    assert not missing and not extra, (
        f"the crawl missed {len(missing)} and added {len(extra)} of the site's pages ({why}): "
        f"missing {sorted(missing)}, extra {sorted(extra)}"
    )
    wrong = {
        url: (fields(stat), expected_fields(expected[url]))
        for url, stat in result.by_url().items()
        if fields(stat) != expected_fields(expected[url])
    }
    first = min(wrong, default="")
    assert not wrong, (
        f"{len(wrong)} records differ from the oracle, first {first}: got {wrong[first][0]}, "
        f"expected {wrong[first][1]} (got, expected):\n"
        + "\n".join(f"{url}: {got} != {exp}" for url, (got, exp) in sorted(wrong.items()))
    )
