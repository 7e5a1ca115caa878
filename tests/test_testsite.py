"""Tests of the local test site: it serves what its oracle says, and the oracle is right.

The oracle is checked against a small sequential crawler written here with http.client,
html.parser and Protego's public API, independent of the crawlers under test.
"""

from __future__ import annotations

import codecs
import collections
import gzip
import http.client
import re
import socket
import ssl
import threading
import time
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from protego import Protego

from shared import USER_AGENT
from shared.responses import MAX_BODY
from shared.testsite import (
    DISALLOWED,
    HOSTILE,
    NEVER,
    ROBOTS_TXT,
    TRAPS,
    Expected,
    ServerTLS,
    Site,
    loopback_hosts,
    serve,
    serve_hosts,
)
from shared.testsite.hostile_wire import BOMB_SIZE, WIRE_HUB, wire_cases
from shared.testsite.traps import FORBIDS
from shared.urls import UrlRules, normalize

REDIRECTS = {300, 301, 302, 303, 307, 308}
PARSED = {"text/html", "application/xhtml+xml", "application/xml", "text/xml"}
META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
FAKE_BASE = "http://127.0.0.1:8000/"  # the oracle needs no server


# --------------------------------------------------------------------------- reference crawler


class LinkParser(HTMLParser):
    """Collect raw link values and the first <base href> of a document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.raw: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("a", "area", "link") and values.get("href") is not None:
            self.raw.append(values["href"] or "")
        elif tag in ("frame", "iframe") and values.get("src") is not None:
            self.raw.append(values["src"] or "")
        elif tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"]


def fetch(
    url: str, timeout: float = 5.0, conn: http.client.HTTPConnection | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One GET, on the given kept-alive connection or a fresh one; raises on any failure."""
    parts = urlsplit(url)
    own = conn is None
    if conn is None:
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        path = parts.path + ("?" + parts.query if parts.query else "")
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, body
    except BaseException:
        conn.close()  # a failed connection is not reused; http.client reconnects on demand
        raise
    finally:
        if own:
            conn.close()


def reference_crawl(
    root: str,
    *,
    max_redirect: int = 10,
    exclude: str | None = None,
    max_tries: int = 4,
    ignore_robots: bool = False,
) -> dict[str, Expected]:
    """A plain sequential crawler following the same rules as the three stages."""
    rules = UrlRules([root], exclude=exclude)
    seen = {root}
    queue = collections.deque([(root, max_redirect)])
    records: dict[str, Expected] = {}
    # One kept-alive connection makes the walk quick; it reconnects after a failure.
    parts = urlsplit(root)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)

    def fetch_with_tries(url: str) -> tuple[int, tuple[int, dict[str, str], bytes] | None]:
        tries, result = 0, None
        while result is None and tries < max_tries:
            tries += 1
            kept = conn.sock is not None  # the connection is kept alive from the last request
            try:
                result = fetch(url, conn=conn)
            except http.client.RemoteDisconnected:  # closed, not one byte of answer
                tries -= kept  # on a kept-alive connection: closed while idle, no try lost
            except (OSError, http.client.HTTPException):
                continue  # a network or protocol failure: try again
        return tries, result

    robots = Protego.parse("")  # no rules: everything allowed
    if not ignore_robots:
        robots_url = f"{parts.scheme}://{parts.netloc}/robots.txt"
        tries, result = fetch_with_tries(robots_url)
        if result is None:
            records[robots_url] = Expected(None, None, None, None, 0, max_tries, True)
        else:
            status, headers, body = result
            media = headers.get("content-type", "").split(";")[0].strip().lower() or None
            records[robots_url] = Expected(status, None, media, None, 0, tries, False)
            if status == 200:
                robots = Protego.parse(body.decode("utf-8-sig", errors="replace"))
    while queue:
        url, redirects_left = queue.popleft()
        if not robots.can_fetch(url, USER_AGENT):
            records[url] = Expected(None, None, None, None, 0, 0, True)
            continue
        tries, result = fetch_with_tries(url)
        if result is None:
            records[url] = Expected(None, None, None, None, 0, max_tries, True)
            continue
        status, headers, body = result
        header = headers.get("content-type")
        media = header.split(";")[0].strip().lower() if header else None
        if status in REDIRECTS:
            next_url = normalize(urljoin(url, headers["location"]))
            records[url] = Expected(status, next_url, media, None, 0, tries, False)
            if redirects_left and next_url and rules.allowed(next_url) and next_url not in seen:
                seen.add(next_url)
                queue.append((next_url, redirects_left - 1))
            continue
        if status != 200 or media not in PARSED:
            records[url] = Expected(status, None, media, None, 0, tries, False)
            continue
        charset = re.search(r"charset=([^;\s]+)", header or "")
        meta = META_CHARSET.search(body[:4096])
        name = charset.group(1) if charset else meta.group(1).decode() if meta else "utf-8"
        encoding = codecs.lookup(name).name
        parser = LinkParser()
        parser.feed(body.decode(encoding, errors="replace"))
        parser.close()
        base = urljoin(url, parser.base) if parser.base else url
        links = set()
        for raw in parser.raw:
            try:
                link = normalize(urljoin(base, raw.strip()))
            except ValueError:  # e.g. "http://[::1"
                continue
            if link and rules.allowed(link):
                links.add(link)
        records[url] = Expected(200, None, media, encoding, len(links), tries, False)
        for link in sorted(links - seen):
            seen.add(link)
            queue.append((link, max_redirect))
    conn.close()
    return records


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def default_site() -> Site:
    return Site()


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


# --------------------------------------------------------------------------- tests


def test_reference_crawler_agrees_with_oracle(default_site: Site) -> None:
    default_site.reset()
    with serve(default_site) as base:
        expected = default_site.expected(base)
        found = reference_crawl(base)
    assert found == expected
    # Each URL was requested once, except the flaky page; nothing forbidden was asked for.
    requests = default_site.requests
    assert requests[TRAPS["flaky"]] == 3
    assert sum(requests.values()) == len(expected) + 2
    assert not [path for path in requests if path.startswith(NEVER)]
    assert requests[TRAPS["joined"]] == 1


def test_default_site_shape(default_site: Site) -> None:
    expected = default_site.expected(FAKE_BASE)
    assert 350 <= len(expected) <= 450
    robots = FAKE_BASE + "robots.txt"
    assert expected[robots] == Expected(404, None, "text/html", None, 0, 1, False)
    assert robots not in default_site.expected(FAKE_BASE, ignore_robots=True)
    statuses = collections.Counter(record.status for record in expected.values())
    assert statuses[404] == 2 and statuses[500] == 1  # the 404s: /traps/missing, robots.txt
    assert sum(statuses[s] for s in REDIRECTS) > 20
    origin = FAKE_BASE.rstrip("/")
    for path in TRAPS.values():
        if path != TRAPS["chain_end"]:
            assert origin + path in expected, path
    assert expected[origin + TRAPS["latin1"]].encoding == "iso8859-1"
    assert expected[origin + TRAPS["meta_charset"]].encoding == "iso8859-1"
    assert expected[origin + TRAPS["http_equiv"]].encoding == "cp1252"
    assert expected[origin + TRAPS["no_type"]] == Expected(200, None, None, None, 0, 1, False)
    assert expected[origin + TRAPS["image"]].content_type == "image/png"
    assert expected[origin + TRAPS["flaky"]].tries == 3
    # The chain: 11 URLs fetched with max_redirect 10, the last points at the 12th.
    assert expected[origin + "/r/chain/10"].next_url == origin + "/r/chain/11"
    assert origin + "/r/chain/11" not in expected
    assert expected[origin + TRAPS["redirect_away"]].next_url == "http://other.example/elsewhere"


def test_served_pages_answer_as_the_oracle_says(default_site: Site) -> None:
    with serve(default_site) as base:
        expected = default_site.expected(base)
        for path in ("/traps/dir/spellings", "/traps/media", TRAPS["no_type"], TRAPS["big"]):
            status, headers, _ = fetch(base.rstrip("/") + path)
            record = expected[base.rstrip("/") + path]
            assert status == record.status
            media = headers.get("content-type", "").split(";")[0] or None
            assert media == record.content_type
        for url, record in expected.items():
            if record.next_url is None:
                continue
            status, headers, _ = fetch(url)
            assert status == record.status
            assert normalize(urljoin(url, headers["location"])) == record.next_url
        _, _, binary = fetch(base + "traps/image.png")
        assert b"href=" in binary  # fetched but never parsed
        _, headers, big = fetch(base + "traps/big")
        assert 900_000 < len(big) < 1_200_000


def test_flaky_page_fails_twice_and_reset_rearms_it() -> None:
    site = Site(pages=3)
    with serve(site) as base:
        url = base + TRAPS["flaky"].lstrip("/")
        for _ in range(2):
            with pytest.raises(http.client.RemoteDisconnected):
                fetch(url)
        assert fetch(url)[0] == 200
        assert fetch(url)[0] == 200
        site.reset()
        assert not site.requests
        with pytest.raises(http.client.RemoteDisconnected):
            fetch(url)
        assert site.requests[TRAPS["flaky"]] == 1


def test_same_parameters_same_site_and_other_seed_differs() -> None:
    one, two, other = Site(300, 1, 5), Site(300, 1, 5), Site(300, 2, 5)
    assert one.expected(FAKE_BASE) == two.expected(FAKE_BASE)
    assert one.expected(FAKE_BASE) != other.expected(FAKE_BASE)
    bodies = []
    for site in (one, two, other):
        with serve(site) as base:
            bodies.append(fetch(base + "p/50")[2].replace(str(port_of(base)).encode(), b"PORT"))
    assert bodies[0] == bodies[1] != bodies[2]
    assert 2000 < len(bodies[0]) < 4000


def test_oracle_options() -> None:
    site = Site(pages=20)
    origin = FAKE_BASE.rstrip("/")
    default = site.expected(FAKE_BASE)

    short = site.expected(FAKE_BASE, max_redirect=2)
    assert short[origin + "/r/chain/2"].next_url == origin + "/r/chain/3"
    assert origin + "/r/chain/3" not in short
    assert origin + "/traps/land/301" in short  # one hop is still within two

    none = site.expected(FAKE_BASE, max_redirect=0)
    assert origin + "/r/chain/1" not in none and origin + "/traps/land/301" not in none
    assert origin + TRAPS["joined"] in none  # it is also linked directly

    excluded = site.expected(FAKE_BASE, exclude=r"/r/|q=2")
    assert not [url for url in excluded if "/r/" in url or "q=2" in url]
    assert origin + TRAPS["search_1"] in excluded
    query = origin + TRAPS["query"]
    assert excluded[query].num_urls == default[query].num_urls - 1
    assert excluded[origin + TRAPS["redirects"]].num_urls == 1  # only /traps/joined

    two = site.expected(FAKE_BASE, max_tries=2)
    assert two[origin + TRAPS["flaky"]] == Expected(None, None, None, None, 0, 2, True)
    assert origin + TRAPS["after_flaky"] not in two
    three = site.expected(FAKE_BASE, max_tries=3)
    assert three[origin + TRAPS["flaky"]].tries == 3
    assert origin + TRAPS["after_flaky"] in three


def test_reference_crawler_agrees_with_options() -> None:
    site = Site(pages=10, seed=3, fanout=3)
    options = {"max_redirect": 2, "exclude": r"q=2|/traps/big$", "max_tries": 2}
    with serve(site) as base:
        assert reference_crawl(base, **options) == site.expected(base, **options)  # type: ignore[arg-type]


def test_serve_closes_the_port_even_with_hanging_requests() -> None:
    site = Site(pages=2, traps=False, hostile=True)
    with serve(site) as base:
        port = port_of(base)
        hanging = socket.create_connection(("127.0.0.1", port))
        hanging.sendall(b"GET /hostile/silent HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.05)
        assert site.max_in_flight == 1
        started = time.perf_counter()
    assert time.perf_counter() - started < 5  # shutdown does not wait for the silent page
    hanging.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_hostile_pages_misbehave_as_documented() -> None:
    site = Site(pages=2, traps=False, hostile=True)
    with serve(site) as base:
        url = base.rstrip("/")
        with pytest.raises(TimeoutError):
            fetch(url + HOSTILE["silent"], timeout=0.1)
        with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
            fetch(url + HOSTILE["reset"])
        with pytest.raises(http.client.IncompleteRead):
            fetch(url + HOSTILE["short"])
        with pytest.raises(http.client.BadStatusLine):
            fetch(url + HOSTILE["garbage"])
        status, headers, body = fetch(url + HOSTILE["binary"])
        assert status == 200 and headers["content-type"] == "text/html"
        assert b"href" not in body.lower() and b"<" not in body
        conn = http.client.HTTPConnection("127.0.0.1", port_of(base), timeout=5)
        conn.request("GET", HOSTILE["huge"])
        response = conn.getresponse()
        assert response.status == 200 and response.length == 20 * 1024 * 1024
        assert len(response.read(1024 * 1024)) == 1024 * 1024
        conn.close()  # hang up mid-body, as a capped crawler does
        expected = site.expected(base)
    for name in ("silent", "reset", "short", "garbage"):
        assert expected[url + HOSTILE[name]] == Expected(None, None, None, None, 0, 4, True)
    assert expected[url + HOSTILE["huge"]] == Expected(200, None, "text/html", None, 0, 1, True)
    binary = Expected(200, None, "text/html", "utf-8", 0, 1, False)
    assert expected[url + HOSTILE["binary"]] == binary


def test_wide_pages_and_latency_are_concurrent() -> None:
    site = Site(pages=1, traps=False, wide=4, wide_delay=0.1, latency=0.02)
    with serve(site) as base:
        started = time.perf_counter()
        threads = [
            threading.Thread(target=fetch, args=(f"{base}wide/{i}",)) for i in range(site.wide)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    assert elapsed >= 0.12  # the delay and the latency were served
    assert site.max_in_flight == 4  # all four at once: concurrent, not one after another
    expected = site.expected(base)
    assert len(expected) == 6  # the root, four wide pages and robots.txt
    assert expected[base].num_urls == 5  # the four wide pages and the root itself


def test_big_plain_site_is_fast_and_levels_add_up() -> None:
    started = time.perf_counter()
    site = Site(pages=10_000, seed=7, fanout=5, traps=False)
    expected = site.expected(FAKE_BASE)
    assert time.perf_counter() - started < 10  # a hang guard; about 0.3 s here
    assert len(expected) == 10_001
    levels = site.levels(FAKE_BASE)
    assert sum(levels) + 1 == len(expected)  # robots.txt is reached by no link: no level
    assert levels[:3] == [1, 5, 25]
    pages = {url: record for url, record in expected.items() if not url.endswith("robots.txt")}
    assert all(record.num_urls >= 1 for record in pages.values())
    small = Site(pages=300)
    assert sum(small.levels(FAKE_BASE)) + 1 == len(small.expected(FAKE_BASE))


# --------------------------------------------------------------------------- robots.txt


def test_robots_oracle_agrees_with_protego() -> None:
    """The oracle decides from DISALLOWED by construction; Protego reads ROBOTS_TXT."""
    site = Site(pages=100, robots="rules")
    rules = Protego.parse(ROBOTS_TXT)
    everything = site.expected(FAKE_BASE, ignore_robots=True)
    for url in everything:
        path = url.removeprefix(FAKE_BASE.rstrip("/"))
        assert rules.can_fetch(url, USER_AGENT) is not path.startswith(DISALLOWED), url
    obeyed = site.expected(FAKE_BASE)
    skipped = {url for url, record in obeyed.items() if record.tries == 0}
    origin = FAKE_BASE.rstrip("/")
    assert {origin + TRAPS["private"], origin + "/p/7", origin + "/p/70"} <= skipped
    assert origin + TRAPS["private_page"] not in obeyed  # linked only from a skipped page
    assert all(
        record == Expected(None, None, None, None, 0, 0, True)
        for record in (obeyed[url] for url in skipped)
    )
    assert not rules.can_fetch(FAKE_BASE, "SomeOtherBot/1.0")  # another crawler's group


@pytest.mark.parametrize("kind", sorted(FORBIDS))
def test_each_robots_kind_forbids_what_protego_reads_in_its_file(kind: str) -> None:
    """Each kind's paths, written in plain Python, agree with its file as Protego reads it;
    and each kind forbids some page of the site, and not all of them."""
    site = Site(pages=100, robots=kind)
    text = site.resource("/robots.txt").body.decode("utf-8-sig")
    rules = Protego.parse(text)
    origin = FAKE_BASE.rstrip("/")
    for url in site.expected(FAKE_BASE, ignore_robots=True):
        path = url.removeprefix(origin)
        assert rules.can_fetch(url, USER_AGENT) is not FORBIDS[kind](path), (kind, url)
    skipped = [url for url, record in site.expected(FAKE_BASE).items() if record.tries == 0]
    assert origin + TRAPS["private"] in skipped
    assert 0 < len(skipped) < 20


def test_reference_crawler_obeys_robots_txt_as_the_oracle_says() -> None:
    site = Site(pages=100, robots="rules")
    with serve(site) as base:
        assert reference_crawl(base) == site.expected(base)
        site.reset()
        assert reference_crawl(base, ignore_robots=True) == site.expected(base, ignore_robots=True)


def test_robots_txt_answers_as_documented() -> None:
    for robots, status in ((None, 404), ("rules", 200), ("garbage", 200), ("broken", 500)):
        site = Site(pages=2, traps=False, robots=robots)
        with serve(site) as base:
            got, headers, body = fetch(base + "robots.txt")
        assert got == status
        if robots == "rules":
            assert body.decode() == ROBOTS_TXT and headers["content-type"].startswith("text/plain")
    with serve(Site(pages=2, traps=False, robots="silent")) as base, pytest.raises(TimeoutError):
        fetch(base + "robots.txt", timeout=0.1)
    with pytest.raises(ValueError, match="robots must be None or one of"):
        Site(robots="maybe")


def test_user_agents_are_observed() -> None:
    site = Site(pages=2, traps=False)
    with serve(site) as base:
        conn = http.client.HTTPConnection("127.0.0.1", port_of(base), timeout=5)
        conn.request("GET", "/", headers={"User-Agent": "probe/1"})
        conn.getresponse().read()
        conn.close()
    assert site.user_agents == {"probe/1": 1}
    site.reset()
    assert not site.user_agents


# --------------------------------------------------------------------------- several hosts


def test_several_hosts_each_serve_the_whole_site_linking_to_itself() -> None:
    """Each host is a site of its own; the oracle of a crawl of them all is their union."""
    site = Site(pages=30)
    with serve_hosts(site, loopback_hosts(3)) as bases:
        assert [urlsplit(base).hostname for base in bases] == [
            "127.0.0.1",
            "127.0.0.2",
            "127.0.0.3",
        ]
        found: dict[str, Expected] = {}
        for base in bases:
            alone = reference_crawl(base)
            assert alone == site.expected(base)
            assert all(url.startswith(base) for url in alone)  # no link leads to another host
            found.update(alone)
    assert found == site.expected(bases)
    # The flaky page dropped its first two requests on every host, not on the first one only.
    assert site.requests[TRAPS["flaky"]] == 3 * 3
    hosts = collections.Counter(host for _, host, path in site.arrivals if path == "/")
    assert hosts == {"127.0.0.1": 1, "127.0.0.2": 1, "127.0.0.3": 1}


def test_the_server_counts_requests_in_flight_per_host_ports_apart() -> None:
    site = Site(pages=2, traps=False, latency=0.3)
    with serve_hosts(site, loopback_hosts(2)) as (first, second):
        # Two requests to the first host at once (one names another port in its Host
        # header: ports are not counted), one to the second.
        port = port_of(first)
        other_port = {"Host": f"127.0.0.1:{port + 1}"}
        jobs = [(first, {}), (first, other_port), (second, {})]
        threads = [threading.Thread(target=get, args=(base, headers)) for base, headers in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert site.max_in_flight_by_host == {"127.0.0.1": 2, "127.0.0.2": 1}
    assert site.max_in_flight == 3
    site.reset()
    assert site.max_in_flight_by_host == {} and site.max_in_flight == 0 and not site.arrivals


def get(base: str, headers: dict[str, str]) -> None:
    """One GET of the root of base, with extra headers."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    conn.request("GET", "/", headers=headers)
    assert conn.getresponse().read()
    conn.close()


def test_the_site_is_served_on_loopback_addresses_only() -> None:
    for host in ("0.0.0.0", "192.168.1.1", "::"):
        with pytest.raises(ValueError, match="loopback"), serve_hosts(Site(pages=1), (host,)):
            pass
    with pytest.raises(ValueError):
        loopback_hosts(0)


# --------------------------------------------------------------------------- https


def test_https_serves_the_same_site_with_links_in_its_own_scheme(test_ca: ServerTLS) -> None:
    site = Site(pages=20)
    context = ssl.create_default_context(cafile=test_ca.cafile)
    with serve(site, tls=test_ca) as base:
        assert base.startswith("https://127.0.0.1:")
        conn = http.client.HTTPSConnection("127.0.0.1", port_of(base), context=context)
        conn.request("GET", TRAPS["spellings"])
        body = conn.getresponse().read().decode()
        conn.request("GET", TRAPS["redirect_308"])
        location = conn.getresponse().getheader("location")
        conn.close()
    netloc = base.split("://")[1].rstrip("/")
    assert f'href="https://{netloc}/traps/dir/a"' in body
    assert f'href="HTTPS://{netloc}/traps/dir/a#Section"' in body
    assert "http://" + netloc not in body.lower()
    assert location == f"HTTPS://{netloc}/traps/land/308#frag"
    # The oracle: the same paths over either scheme.
    http_paths = {url.split("/", 3)[3] for url in site.expected(FAKE_BASE)}
    https_paths = {url.split("/", 3)[3] for url in site.expected(base)}
    assert http_paths == https_paths


# --- the wire cases (hostile_wire.py) ------------------------------------------------------


def raw_get(base: str, path: str) -> bytes:
    """Send a GET for ``path`` and return every byte the server sent until it closed."""
    with socket.create_connection(("127.0.0.1", port_of(base)), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_wire_cases_are_sent_byte_for_byte_then_closed() -> None:
    site = Site(pages=2, traps=False, wire=True)
    with serve(site) as base:
        for path, case in wire_cases().items():
            assert raw_get(base, path) == case.meaning.body, path
        # The hub links to every case; a Latin-1 byte in a target keeps its escape.
        hub = raw_get(base, WIRE_HUB)
        assert all(f'href="{path}"'.encode() in hub for path in wire_cases())
        assert b"Landed on /wire/land/caf%E9" in raw_get(base, "/wire/land/caf%E9")
        assert b"Landed on /wire/land/caf%E9" in raw_get(base, "/wire/land/caf%e9")


def test_wire_oracle_needs_the_stage_and_gives_stage_3_its_own_records() -> None:
    site = Site(pages=2, traps=False, wire=True)
    with pytest.raises(ValueError, match="stage"):
        site.expected(FAKE_BASE)
    origin = FAKE_BASE.rstrip("/")
    one = site.expected(FAKE_BASE, stage="stage1_callbacks")
    three = site.expected(FAKE_BASE, stage="stage3_asyncio")
    assert one.keys() == three.keys()  # the same pages; only some records differ
    differ = {url for url in one if one[url] != three[url]}
    by_stage = {origin + path for path, case in wire_cases().items() if case.stage3}
    documented = ("length-shorter", "no-content-body", "chunk-huge", "chunk-extension")
    documented += ("trailers-endless",)
    documented += ("length-list", "length-twice")
    documented += ("chunk-extension-spaces", "chunked-bare-lf", "chunk-last-unended")
    assert differ == by_stage == {f"{origin}/wire/{name}" for name in documented}
    for path, case in wire_cases().items():
        assert bool(case.stage3) == bool(case.why), f"{path}: a stage 3 record needs its why"
    failed = Expected(None, None, None, None, 0, 4, True)
    assert one[origin + "/wire/nul"] == three[origin + "/wire/nul"] == failed
    assert one[origin + "/wire/location-latin1"].next_url == origin + "/wire/land/caf%E9"
    assert one[origin + "/wire/location-garbage"].next_url is None
    assert three[origin + "/wire/gzip-bomb"] == Expected(
        200, None, "text/html", "utf-8", 0, 1, False
    )
    assert one[origin + "/wire/chunk-huge"] == Expected(200, None, "text/html", None, 0, 1, True)
    assert one[origin + "/wire/location-twice"].next_url == origin + "/wire/land/a,%20/wire/land/b"
    assert three[origin + "/wire/land/cookie-gated"].status == 403


def test_the_gzip_bomb_inflates_past_the_cap_from_a_few_kilobytes() -> None:
    bomb = wire_cases()["/wire/gzip-bomb"].meaning.body
    assert len(bomb) < 64 * 1024
    assert len(gzip.decompress(bomb.partition(b"\r\n\r\n")[2])) == BOMB_SIZE > MAX_BODY
