"""The site: generated pages plus the traps, defined in memory, rendered on request.

Shape of the site
-----------------
* ``/`` is page 0 and ``/p/<n>`` are pages 1..pages-1.  The pages form a complete
  ``fanout``-ary tree (so every page is reachable from the root) and pages with fewer
  than ``fanout`` children get random extra links, so each page has about ``fanout``
  links, spelled in several equivalent ways, and about 2.5 KB of filler text.
* With ``traps=True`` (the default) the root also links to ``/traps/``, a hub for the
  pages listed in :data:`TRAPS` (traps.py): odd link spellings, redirects of every
  kind, errors, a flaky page, non-HTML bodies, XML, foreign and invalid links, charsets
  declared in every way, broken bytes, a 1 MB page, and private pages for robots.txt
  to forbid.
* With ``hostile=True`` the root also links to the pages in :data:`HOSTILE`, which
  misbehave at the HTTP level (no answer, reset, short body, garbage, 20 MB, random
  bytes).  With ``wide=N`` it links to ``/wide/0`` .. ``/wide/N-1``, slow tiny pages.
* With ``endless=True`` it links to the pages in :data:`ENDLESS` (endless.py): servers
  that never finish (floods, trickles, endless heads), bounded by ``endless_s`` seconds,
  and keep-alive connections closed unannounced.  ``silent_close=True`` closes every
  connection that way, after its first response, without ``Connection: close``.
* With ``wire=True`` the root also links to ``/wire/``, the hub of the responses that
  are odd byte by byte (hostile_wire.py); a few mean something else to stage 3, so
  :meth:`Site.expected` must then be told the stage.
"""

from __future__ import annotations

import collections
import random
import time
from collections.abc import Sequence

from aiohttp import web

from shared.testsite.endless import ENDLESS, endless_pages
from shared.testsite.hostile_wire import WIRE_HUB, wire_pages
from shared.testsite.oracle import Expected, Walk, walk
from shared.testsite.pages import NOT_FOUND, WORDS, Resource
from shared.testsite.server import make_app
from shared.testsite.traps import HOSTILE, hostile_pages, robots_page, trap_pages

#: The rules of one walk, as oracle.walk takes them after the site, and its key in the memo:
#: (base_url, max_redirect, exclude, max_tries, ignore_robots, stage).
WalkKey = tuple[str, int, str | None, int, bool, str | None]


class Site:
    """A deterministic test site that can serve itself and predict a correct crawl.

    ``pages`` normal pages with about ``fanout`` links each are generated from
    ``random.Random(seed)``.  ``latency`` delays every response; ``traps`` adds the trap
    pages (:data:`TRAPS`), ``hostile`` the hostile ones (:data:`HOSTILE`), ``wire`` the
    responses odd byte by byte (hostile_wire.py), and ``wide`` pages ``/wide/<i>``
    linked from the root that each take ``wide_delay`` seconds.
    ``robots`` chooses what /robots.txt answers: None (a 404) or one of
    :data:`ROBOTS_KINDS`.  ``endless`` adds the endless cases (:data:`ENDLESS`), which the
    server ends after ``endless_s`` seconds (None: never); ``silent_close`` makes every
    connection serve one response and then close unannounced, the next request on it
    met with a close.

    The server (server.py) observes every request it answers, for tests to read:
    ``requests`` (canonical path+query -> count, every host together), ``user_agents``
    (User-Agent header -> count), ``arrivals`` (``(time.monotonic(), host, path)`` per
    request, in the order they came), ``max_in_flight`` (the most requests it was
    answering at once) and ``max_in_flight_by_host`` (the same, per host).  A host is
    the name the request was sent to, without the port, as a crawler's per-host limits
    count it.  ``held`` lists ``(path, seconds)``: how long a client kept each connection
    to an endless case.  :meth:`reset` clears the observations and re-arms the flaky page.

    One Site may be served on several hosts at once (:func:`serve_hosts`): each host
    then serves the whole site, its absolute links pointing to itself.
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
        wire: bool = False,
        wide: int = 0,
        wide_delay: float = 0.0,
        robots: str | None = None,
        endless: bool = False,
        endless_s: float | None = 15.0,
        silent_close: bool = False,
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
        self.wire = wire
        self.wide = wide
        self.wide_delay = wide_delay
        self.robots = robots
        self.endless = endless
        self.endless_s = endless_s
        self.silent_close = silent_close
        self.held: list[tuple[str, float]] = []  # endless cases: (path, seconds connected)
        self.requests: collections.Counter[str] = collections.Counter()
        self.user_agents: collections.Counter[str] = collections.Counter()
        self.max_in_flight = 0  # the most requests answered at once, every host together
        self.max_in_flight_by_host: dict[str, int] = {}  # host -> the most at once to it
        self.arrivals: list[tuple[float, str, str]] = []  # (time.monotonic(), host, path)
        self._in_flight: collections.Counter[str] = collections.Counter()  # host -> now
        self._drop_counts: collections.Counter[str] = collections.Counter()  # origin+path
        # The definition never changes, so each walk of it is computed once.
        self._walks: dict[WalkKey, Walk] = {}

        rng = random.Random(seed)
        # A pool of paragraphs shared by all pages keeps memory flat for big sites; each
        # page picks its own five, so pages still differ from each other.
        self._filler = [
            "<p>" + " ".join(rng.choice(WORDS) for _ in range(70)) + "</p>\n" for _ in range(16)
        ]
        # Only the random extra links are stored; tree links are computed from the index.
        self._extra: list[tuple[int, ...]] = []
        for n in range(pages):
            missing = fanout - len(self._children(n))
            self._extra.append(tuple(rng.randrange(pages) for _ in range(missing)))

        self._specials: dict[str, Resource] = {}
        if traps:
            self._specials.update(trap_pages())
        if hostile:
            self._specials.update(hostile_pages())
        if endless:
            self._specials.update(endless_pages())
        if wire:
            self._specials.update(wire_pages())
        for i in range(wide):
            body = f"<html><body><p>Wide page {i}</p></body></html>\n".encode()
            self._specials[f"/wide/{i}"] = Resource(kind="wide", body=body)
        if robots is not None:
            self._specials["/robots.txt"] = robots_page(robots)

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
        if self.endless:
            extras += list(ENDLESS.values())
        if self.wire:
            extras.append(WIRE_HUB)
        return extras

    def resource(self, path: str) -> Resource:
        """The definition of a canonical path (404 for anything undefined)."""
        special = self._specials.get(path)
        if special is not None:
            return special
        if path == "/":
            n = 0
        elif path.startswith("/p/") and path[3:].isdigit() and not path[3:].startswith("0"):
            n = int(path[3:])
            if n >= self.pages:
                return NOT_FOUND
        else:
            return NOT_FOUND
        links = [self._page_path(m) for m in self._page_links(n)]
        if n == 0:
            links += self._root_extras()
        return Resource(kind="page", links=tuple(links), page=n)

    def resource_for(self, path: str, stage: str | None) -> Resource:
        """The definition of a path as the oracle reads it for a stage (None: any stage).

        The same as :meth:`resource` but for the wire cases that stage reads its own way.
        """
        if self.wire and path in self._specials:
            return wire_pages(stage).get(path, self._specials[path])
        return self.resource(path)

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

    def render_page(self, n: int, origin: str) -> bytes:
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

    def _walk(self, key: WalkKey) -> Walk:
        """Breadth-first walk of the definition with the crawler's rules (memoised)."""
        if self.wire and key[-1] is None:
            raise ValueError("the wire cases differ by stage: say which (stage=...)")
        if key not in self._walks:
            self._walks[key] = walk(self, *key)
        return self._walks[key]

    def expected(
        self,
        base_url: str | Sequence[str],
        *,
        max_redirect: int = 10,
        exclude: str | None = None,
        max_tries: int = 4,
        ignore_robots: bool = False,
        stage: str | None = None,
    ) -> dict[str, Expected]:
        """The oracle: the record a correct crawl from base_url makes, per absolute URL.

        Unless ``ignore_robots``, that includes the record of /robots.txt, and a record
        with no tries for each URL reached that robots.txt forbids.  Given several base
        URLs (one per host, as :func:`serve_hosts` yields them, crawled together as the
        roots of one crawl), it returns the records of them all: no page of one host
        links to another, so each host's records are those of a crawl of it alone.
        ``stage`` (the stage's package name) is needed with ``wire=True`` only.
        """
        bases = [base_url] if isinstance(base_url, str) else list(base_url)
        records: dict[str, Expected] = {}
        for base in bases:
            walk = self._walk((base, max_redirect, exclude, max_tries, ignore_robots, stage))
            records.update(walk.records)
        return records

    def levels(
        self,
        base_url: str,
        *,
        max_redirect: int = 10,
        exclude: str | None = None,
        max_tries: int = 4,
        ignore_robots: bool = False,
        stage: str | None = None,
    ) -> list[int]:
        """How many URLs are first reached at each depth (0 = the root) of the crawl.

        robots.txt is reached by no link, so it is in no level.
        """
        walk = self._walk((base_url, max_redirect, exclude, max_tries, ignore_robots, stage))
        depths = walk.depth.values()
        sizes = [0] * (max(depths) + 1)
        for depth in depths:
            sizes[depth] += 1
        return sizes

    # ----------------------------------------------------------------- observations

    def reset(self) -> None:
        """Forget the observations and re-arm per-URL state such as the flaky page."""
        self.requests.clear()
        self.user_agents.clear()
        self.arrivals.clear()
        self.held.clear()
        # Requests still being answered (a silent page, say) count from their start.
        self.max_in_flight = self._in_flight.total()
        self.max_in_flight_by_host = {host: n for host, n in self._in_flight.items() if n}
        self._drop_counts.clear()

    def arrived(self, host: str, path: str, user_agent: str) -> None:
        """Note a request the server begins to answer: one more in flight to its host."""
        self.requests[path] += 1
        self.user_agents[user_agent] += 1
        self.arrivals.append((time.monotonic(), host, path))
        self._in_flight[host] += 1
        most = max(self.max_in_flight_by_host.get(host, 0), self._in_flight[host])
        self.max_in_flight_by_host[host] = most
        self.max_in_flight = max(self.max_in_flight, self._in_flight.total())

    def answered(self, host: str) -> None:
        """Note that the server is done with a request (answered, dropped or cancelled)."""
        self._in_flight[host] -= 1

    def drops_left(self, url: str, res: Resource) -> bool:
        """Tell whether the flaky page res at url has requests left to drop."""
        return self._drop_counts[url] < res.drops

    def drop_now(self, url: str, res: Resource) -> bool:
        """Tell whether this request of res must be dropped: the flaky page's first tries.

        Counted per URL, so that each host of a site served on several has its own.
        """
        self._drop_counts[url] += 1
        return self._drop_counts[url] <= res.drops

    def make_app(self) -> web.Application:
        """An aiohttp application serving this site (see :func:`server.make_app`)."""
        return make_app(self)
