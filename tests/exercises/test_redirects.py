"""Exercise redirects: BaseCrawler.record_response, and the redirect coalescing in it.

record_response is shared: every stage hands it each complete response and queues the
``(url, redirects left)`` pairs it returns.  Task 1 is a page read for its links, Task 2
the responses that are recorded but never read, Task 3 a redirect followed by the
crawler itself, Task 4 redirect paths that join, fetched once.

Most tests call record_response directly on a BaseCrawler (no network: nothing is
fetched, the responses are made up).  The crawls run stage 1 against the test site of
shared/testsite.py and compare with its oracle; the last one runs every stage.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from reasons import reason

import stage1_callbacks
from shared import robots as robots_module
from shared.crawling import BaseCrawler, Options
from shared.report import FetchStatistic
from shared.responses import Response
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle

ROOT = "http://127.0.0.1:8080/"  # never contacted: these responses are made up
HTML = {"content-type": "text/html; charset=utf-8"}


def crawler(**options: Any) -> BaseCrawler:
    """A crawler of ROOT that has fetched nothing yet (robots.txt ignored unless asked)."""
    options.setdefault("ignore_robots", True)
    return BaseCrawler([ROOT], Options(**options))


def html(*hrefs: str) -> bytes:
    """An HTML body with a link to each href."""
    return "".join(f'<p><a href="{href}">{href}</a></p>' for href in hrefs).encode()


def record_of(crawler: BaseCrawler, url: str) -> FetchStatistic:
    """The crawler's one record for url."""
    records = [stat for stat in crawler.result().fetches if stat.url == url]
    assert len(records) == 1, reason(
        "redirects.records-for", records_count=len(records), url=url, records=records
    )
    return records[0]


def redirect(status: int, location: str | None, body: bytes = b"") -> Response:
    """A redirect response (its body, if any, is HTML that must not be read)."""
    headers = dict(HTML)
    if location is not None:
        headers["location"] = location
    return Response(status, headers, body)


# --- the oracle's view of a record ---------------------------------------------------------


# --- Task 1: a page and its links ----------------------------------------------------------


@pytest.mark.task(taskno=1)
def test_a_page_is_recorded_and_its_links_are_queued() -> None:
    """Each distinct link in scope once, sorted, with a full allowance of redirects."""
    c = crawler()
    body = html("/a", "b", "/a#again", "http://other.example/", "mailto:x@other.example")
    items = c.record_response(ROOT, 10, Response(200, HTML, body), 2)
    assert items == [(ROOT + "a", 10), (ROOT + "b", 10)], reason(
        "redirects.queued-each-distinct-link-in", items=items
    )
    stat = record_of(c, ROOT)
    assert (stat.status, stat.next_url, stat.error, stat.tries) == (200, None, None, 2), reason(
        "redirects.the-page-was-recorded-as", stat=stat
    )
    assert (stat.content_type, stat.encoding, stat.size) == ("text/html", "utf-8", len(body)), (
        reason("redirects.the-page-was-recorded-as-2", stat=stat)
    )
    assert (stat.num_urls, stat.num_new_urls) == (2, 2), reason(
        "redirects.the-record-counts-links-and", value1=stat.num_urls, value3=stat.num_new_urls
    )


@pytest.mark.task(taskno=1)
def test_links_seen_before_are_not_queued_again() -> None:
    c = crawler()
    c.record_response(ROOT, 10, Response(200, HTML, html("/a", "/b")), 1)
    items = c.record_response(ROOT + "a", 10, Response(200, HTML, html("/", "/b", "/c")), 1)
    assert items == [(ROOT + "c", 10)], reason("redirects.only-the-links-not-yet", items=items)
    stat = record_of(c, ROOT + "a")
    assert (stat.num_urls, stat.num_new_urls) == (3, 1), reason(
        "redirects.the-record-counts-links-and-2", value1=stat.num_urls, value3=stat.num_new_urls
    )


@pytest.mark.task(taskno=1)
def test_a_link_starts_with_the_crawls_allowance_of_redirects() -> None:
    """The page was reached with 2 redirects left; its links get --max-redirect again."""
    c = crawler(max_redirect=5)
    items = c.record_response(ROOT + "moved", 2, Response(200, HTML, html("/next")), 1)
    assert items == [(ROOT + "next", 5)], reason("redirects.link-allowance", items=items)


@pytest.mark.task(taskno=1)
def test_the_body_is_decoded_with_its_charset() -> None:
    """A latin-1 page: the link's é is a latin-1 byte, and becomes %C3%A9 in the URL."""
    c = crawler()
    body = '<a href="/caf\xe9">caf\xe9</a>'.encode("latin-1")
    headers = {"content-type": "text/html; charset=latin-1"}
    items = c.record_response(ROOT, 10, Response(200, headers, body), 1)
    assert items == [(ROOT + "caf%C3%A9", 10)], reason(
        "redirects.queued-decode-with-the-charset", items=items
    )
    encoding = record_of(c, ROOT).encoding
    assert encoding == "iso8859-1", reason("redirects.the-page-was-decoded-as", encoding=encoding)


@pytest.mark.task(taskno=1)
def test_a_site_of_plain_pages_gives_the_oracles_records() -> None:
    site = Site(pages=30, traps=False)
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(ignore_robots=True))
        assert_matches_oracle(result, site.expected(base, ignore_robots=True))


# --- Task 2: recorded, never read -----------------------------------------------------------


@pytest.mark.task(taskno=2)
@pytest.mark.parametrize("status", [404, 500, 201, 203, 206])
def test_a_status_other_than_200_is_recorded_and_not_read_for_links(status: int) -> None:
    """An HTML body with a link: an error page, or a success that is not a page (201
    Created, 203, 206 Partial Content: a part of a page).  Only a 200 is a page."""
    c = crawler()
    body = html("/never")
    items = c.record_response(ROOT + "other", 10, Response(status, HTML, body), 1)
    assert items == [], reason("redirects.not-a-page-queued", status=status, items=items)
    stat = record_of(c, ROOT + "other")
    assert (stat.status, stat.content_type, stat.size, stat.error) == (
        status,
        "text/html",
        len(body),
        None,
    ), reason("redirects.not-a-page-recorded-as", status=status, stat=stat)
    assert (stat.encoding, stat.num_urls) == (None, 0), reason(
        "redirects.not-a-page-read-for-links", status=status, stat=stat
    )


@pytest.mark.parametrize(
    "content_type", ["image/png", "text/plain; charset=utf-8", "application/json", None]
)
@pytest.mark.task(taskno=2)
def test_bodies_of_types_that_are_not_parsed_are_not_read(content_type: str | None) -> None:
    c = crawler()
    headers = {"content-type": content_type} if content_type else {}
    body = b'<a href="/never">not a link here</a>'
    items = c.record_response(ROOT + "file", 10, Response(200, headers, body), 1)
    assert items == [], reason(
        "redirects.a-body-of-type-queued", content_type=content_type, items=items
    )
    stat = record_of(c, ROOT + "file")
    media_type = content_type.split(";")[0] if content_type else None
    assert (stat.status, stat.content_type, stat.size) == (200, media_type, len(body)), reason(
        "redirects.recorded-as-status-type-and", stat=stat
    )
    assert (stat.encoding, stat.num_urls) == (None, 0), reason(
        "redirects.the-body-was-read-for", stat=stat
    )


@pytest.mark.task(taskno=2)
def test_a_body_too_large_is_recorded_with_an_error() -> None:
    c = crawler()
    response = Response(200, HTML, b"", too_large=True)
    items = c.record_response(ROOT + "huge", 10, response, 1)
    assert items == [], reason("redirects.a-body-too-large-queued", items=items)
    stat = record_of(c, ROOT + "huge")
    assert stat.status == 200 and stat.content_type == "text/html", reason(
        "redirects.recorded-as", stat=stat
    )
    assert stat.error is not None and stat.size is None, reason(
        "redirects.a-body-too-large-is", stat=stat
    )
    assert (stat.encoding, stat.num_urls) == (None, 0), reason(
        "redirects.a-body-too-large-was", stat=stat
    )


@pytest.mark.task(taskno=2)
def test_a_robots_txt_is_obeyed_and_never_read_for_links() -> None:
    """Its rules are learned; its body, even as HTML, is never searched for links."""
    c = crawler(ignore_robots=False)
    robots = ROOT + "robots.txt"
    c.begin_robots(robots)
    body = b"User-agent: *\nDisallow: /private/\n" + html("/from-robots")
    items = c.record_response(robots, 0, Response(200, HTML, body), 1)
    assert items == [], reason("redirects.a-robots-txt-queued-learn", items=items)
    assert record_of(c, robots).status == 200, reason("redirects.the-robots-txt-was-not")
    assert not c.begin(ROOT + "private/page"), reason("redirects.the-rules-were-learned")
    assert c.begin(ROOT + "public/page"), reason("redirects.the-rules-forbid-a-page")


@pytest.mark.task(taskno=2)
def test_a_robots_txt_that_redirects_is_not_followed() -> None:
    c = crawler(ignore_robots=False)
    robots = ROOT + "robots.txt"
    c.begin_robots(robots)
    items = c.record_response(robots, 10, redirect(301, "/elsewhere.txt"), 1)
    assert items == [], reason("redirects.a-robots-txt-s-redirect", items=items)
    assert c.begin(ROOT + "any/page"), reason("redirects.a-robots-txt-that-is")


@pytest.mark.task(taskno=2)
def test_a_robots_txt_too_large_is_learned_as_unread() -> None:
    """Whatever its response, a robots.txt recorded is known after: its pages wait no more."""
    c = crawler(ignore_robots=False)
    robots = ROOT + "robots.txt"
    c.begin_robots(robots)
    c.record_response(robots, 0, Response(200, {"content-type": "text/plain"}, too_large=True), 1)
    waits_for = c.robots_txt(ROOT + "any/page")
    assert waits_for is None, reason("redirects.too-large-robots-unlearned", robots=waits_for)


@pytest.mark.task(taskno=2)
def test_a_robots_txt_that_cannot_be_read_is_recorded_with_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parser fails on it (a bug of the parser's): everything is allowed, and the
    robots.txt's record says why its rules were not read."""

    def fails(response: Response | None) -> robots_module.Rules:
        raise ValueError("a rule the parser chokes on")

    monkeypatch.setattr(robots_module, "parse_robots", fails)
    c = crawler(ignore_robots=False)
    robots = ROOT + "robots.txt"
    c.begin_robots(robots)
    body = b"User-agent: *\nDisallow: /\n"
    items = c.record_response(robots, 0, Response(200, {"content-type": "text/plain"}, body), 1)
    assert items == [], reason("redirects.a-robots-txt-queued-learn", items=items)
    error = record_of(c, robots).error
    assert error is not None and error == c.unread_robots(robots), reason(
        "redirects.unread-robots-error", error=repr(error)
    )


@pytest.mark.task(taskno=2)
def test_robots_txt_and_hostile_pages_give_the_oracles_records() -> None:
    """robots.txt rules, and a 20 MB body among the hostile pages."""
    site = Site(pages=12, traps=False, hostile=True, robots="rules")
    with serve(site) as base:
        result = stage1_callbacks.crawl([base], Options(timeout=0.5, max_tries=1))
        assert_matches_oracle(result, site.expected(base, max_tries=1))


# --- Task 3: follow a redirect ------------------------------------------------------------


@pytest.mark.task(taskno=3)
def test_a_redirect_is_recorded_with_its_target_and_the_target_is_queued() -> None:
    """A relative Location, joined to the URL; one redirect fewer; the body not read."""
    c = crawler()
    response = redirect(302, "new", html("/never"))
    items = c.record_response(ROOT + "old", 10, response, 1)
    assert items == [(ROOT + "new", 9)], reason("redirects.one-fewer", items=items)
    stat = record_of(c, ROOT + "old")
    assert (stat.status, stat.next_url, stat.error, stat.num_urls) == (
        302,
        ROOT + "new",
        None,
        0,
    ), reason("redirects.the-redirect-was-recorded-as", stat=stat)


@pytest.mark.task(taskno=3)
def test_every_redirect_status_is_followed_to_its_normalised_target() -> None:
    c = crawler()
    locations = {
        300: ("./../land/300", "land/300"),
        301: (ROOT + "land/301", "land/301"),
        302: ("../land/302", "land/302"),
        303: ("/land/303", "land/303"),
        307: ("//127.0.0.1:8080/land/307", "land/307"),
        308: ("HTTP://127.0.0.1:8080/land/308#frag", "land/308"),
    }
    for status, (location, path) in locations.items():
        url = f"{ROOT}r/{status}"
        items = c.record_response(url, 3, redirect(status, location), 1)
        assert items == [(ROOT + path, 2)], reason(
            "redirects.a-to-queued-not-its", status=status, location=repr(location), items=items
        )
        assert record_of(c, url).next_url == ROOT + path, reason(
            "redirects.the-s-record-lost-its", status=status
        )


@pytest.mark.task(taskno=3)
def test_a_redirect_with_no_redirects_left_is_recorded_but_not_followed() -> None:
    c = crawler()
    items = c.record_response(ROOT + "old", 0, redirect(301, "/new"), 1)
    assert items == [], reason("redirects.with-no-redirects-left-a", items=items)
    assert record_of(c, ROOT + "old").next_url == ROOT + "new", reason(
        "redirects.the-record-still-says-where"
    )


@pytest.mark.task(taskno=3)
def test_a_redirect_off_the_site_is_recorded_but_not_followed() -> None:
    c = crawler()
    away = "http://other.example/elsewhere"
    items = c.record_response(ROOT + "away", 10, redirect(302, away), 1)
    assert items == [], reason("redirects.a-redirect-to-another-host", items=items)
    assert record_of(c, ROOT + "away").next_url == away, reason(
        "redirects.the-record-lost-the-target"
    )


@pytest.mark.task(taskno=3)
def test_a_redirect_without_a_location_is_recorded_only() -> None:
    c = crawler()
    items = c.record_response(ROOT + "lost", 10, redirect(302, None), 1)
    assert items == [], reason("redirects.a-redirect-with-no-location", items=items)
    stat = record_of(c, ROOT + "lost")
    assert (stat.status, stat.next_url) == (302, None), reason("redirects.recorded-as", stat=stat)


@pytest.mark.task(taskno=3)
def test_with_max_redirect_0_every_redirect_is_recorded_and_none_followed(
    default_site: tuple[Site, str],
) -> None:
    site, base = default_site
    result = stage1_callbacks.crawl([base], Options(max_redirect=0))
    assert_matches_oracle(result, site.expected(base, max_redirect=0))


# --- Task 4: coalesce -------------------------------------------------------------------


@pytest.mark.task(taskno=4)
def test_two_redirects_to_one_target_queue_it_once() -> None:
    """Both are recorded with their target; only the first puts it in the queue."""
    c = crawler()
    joined = ROOT + "joined"
    first = c.record_response(ROOT + "join-a", 10, redirect(301, "/joined"), 1)
    assert first == [(joined, 9)], reason("redirects.the-first-redirect-to-joined", first=first)
    second = c.record_response(ROOT + "join-b", 10, redirect(307, "/joined#x"), 1)
    assert second == [], reason("redirects.coalesce", items=second)
    assert record_of(c, ROOT + "join-a").next_url == joined, reason(
        "redirects.join-a-s-record-lost"
    )
    assert record_of(c, ROOT + "join-b").next_url == joined, reason(
        "redirects.join-b-s-record-lost"
    )


@pytest.mark.task(taskno=4)
def test_a_redirect_to_a_page_already_seen_queues_nothing() -> None:
    c = crawler()
    c.record_response(ROOT, 10, Response(200, HTML, html("/target", "/old")), 1)
    items = c.record_response(ROOT + "old", 10, redirect(302, "/target"), 1)
    assert items == [], reason("redirects.a-redirect-to-a-page", items=items)
    assert c.record_response(ROOT + "target", 9, redirect(302, "/"), 1) == [], reason(
        "redirects.the-root-too"
    )


@pytest.mark.task(taskno=4)
def test_a_redirect_target_counts_as_seen_for_links_found_later() -> None:
    c = crawler()
    c.record_response(ROOT + "old", 10, redirect(301, "/new"), 1)
    items = c.record_response(ROOT, 10, Response(200, HTML, html("/new", "/other")), 1)
    assert items == [(ROOT + "other", 10)], reason("redirects.new-is-queued-already")


@pytest.mark.task(taskno=4)
def test_a_redirect_cycle_ends() -> None:
    """/r/1 -> /r/2 -> /r/1: the second hop leads back to a URL already seen."""
    c = crawler()
    c.record_response(ROOT, 10, Response(200, HTML, html("/r/1", "/r/self")), 1)
    items = c.record_response(ROOT + "r/1", 10, redirect(302, "/r/2"), 1)
    assert items == [(ROOT + "r/2", 9)], reason("redirects.r-1-to-r-2", items=items)
    items = c.record_response(ROOT + "r/2", 9, redirect(302, "1"), 1)
    assert items == [], reason("redirects.r-2-back-to-r", items=items)
    items = c.record_response(ROOT + "r/self", 10, redirect(302, "/r/self"), 1)
    assert items == [], reason("redirects.a-redirect-to-itself-queued", items=items)


@pytest.mark.task(taskno=4)
def test_max_redirect_2_gives_the_oracles_records(default_site: tuple[Site, str]) -> None:
    """The long chain stops after two hops; the cycle and the joined paths end early."""
    site, base = default_site
    result = stage1_callbacks.crawl([base], Options(max_redirect=2))
    assert_matches_oracle(result, site.expected(base, max_redirect=2))


@pytest.mark.task(taskno=4)
def test_every_stage_fetches_each_url_once_and_gives_the_oracles_records(
    stage: ModuleType, default_site: tuple[Site, str]
) -> None:
    """One record_response for all three crawlers: the same pages, each requested once."""
    site, base = default_site
    result = stage.crawl([base], Options())
    expected = site.expected(base)
    assert_matches_oracle(result, expected)
    requested = {base.rstrip("/") + path: n for path, n in site.requests.items()}
    twice = sorted(
        url for url, n in requested.items() if url in expected and n > expected[url].tries
    )
    assert requested == {url: exp.tries for url, exp in expected.items()}, reason(
        "redirects.urls-requested-more-often-than", twice=twice
    )
