"""robots.txt, the same for every stage: where it lives, what it says, what a skip looks like.

A site asks crawlers, in ``/robots.txt`` at the root of each origin (scheme, host and
port), to stay out of some paths.  Each stage fetches that file with its own machinery
before the first page of the origin and waits for it; the stdlib's
``urllib.robotparser`` reads it and answers for every URL.  The fetch is the stage's
business; everything else is decided here.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

from shared import USER_AGENT
from shared.log import Logger
from shared.report import FetchStatistic
from shared.responses import Response

LOGGER = Logger("crawler")

#: The error of the record a URL gets when robots.txt forbids it.
DISALLOWED = "disallowed by robots.txt"


def robots_url(url: str) -> str:
    """Return the robots.txt URL of a normalised URL's origin: scheme://host[:port]/robots.txt."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))


#: How much of a robots.txt is read: RFC 9309 (2.5) asks for at least 500 KiB, and
#: Google's crawler reads that much and ignores the rest.
MAX_ROBOTS = 500 * 1024


def parse_robots(response: Response | None) -> tuple[RobotFileParser, str | None]:
    """Return the rules a robots.txt response sets, and what in it could not be read.

    Only a complete 200 response is read.  Anything else allows everything: a missing
    file (4xx), and one that cannot be read (no response at all, 5xx, a redirect, a
    body too large); a body that is not robots.txt at all holds no rules, and so
    allows everything too.  (RFC 9309 asks a crawler to keep away from a site whose
    robots.txt answers 5xx; we keep the simpler rule and say so in REAL_WEB.md.)

    A line ``urllib.robotparser`` raises on (``Crawl-delay: ²``, ``Disallow: http://[::1``)
    is dropped, as if it were not there, and the rest obeyed: RFC 9309 asks a crawler to
    use what it can of the file.  The second value says which lines were dropped (None:
    every line was read).
    """
    lines: list[str] = []  # no rule at all: everything is allowed
    if readable(response):
        assert response is not None
        # RFC 9309: robots.txt is UTF-8.  Bytes that are not cannot spell a rule.
        lines = response.body[:MAX_ROBOTS].decode("utf-8", errors="replace").splitlines()
    parser = RobotFileParser()
    try:
        parser.parse(lines)  # also notes the time: before that, can_fetch() says no to all
        return parser, None
    except Exception:  # some line raised, and parse() dropped the whole file: find which
        pass
    kept, dropped = [], []
    for number, line in enumerate(lines, 1):
        try:  # the line alone, in a group, where every field of it is read
            RobotFileParser().parse(["User-agent: *", line])
            kept.append(line)
        except Exception as exc:
            dropped.append(f"line {number}: {type(exc).__name__}: {exc}")
    parser = RobotFileParser()
    parser.parse(kept)  # each line was read alone, so together they are read too
    some = "1 unreadable line" if len(dropped) == 1 else f"{len(dropped)} unreadable lines"
    return parser, f"robots.txt: {some} ignored, the first {dropped[0]}"


def readable(response: Response | None) -> bool:
    """Tell whether a robots.txt response is one whose rules are read: a complete 200."""
    return response is not None and response.status == 200 and not response.too_large


class Robots:
    """What each origin's robots.txt allows, as far as the crawl has learned it.

    ``parsed`` maps a robots.txt URL to its parsed rules once the fetch has finished;
    ``pending`` holds the robots.txt URLs being fetched now; ``unread`` maps a robots.txt
    URL to what could not be read in it, for its record.
    """

    def __init__(self, user_agent: str = USER_AGENT) -> None:
        """Start knowing nothing; ``user_agent`` picks our group of rules in each file."""
        self.user_agent = user_agent
        self.parsed: dict[str, RobotFileParser] = {}
        self.pending: set[str] = set()
        self.unread: dict[str, str] = {}

    def known(self, url: str) -> bool:
        """Tell whether the rules for url's origin have been learned."""
        return robots_url(url) in self.parsed

    def allows(self, url: str) -> bool:
        """Tell whether url may be fetched; KeyError if its robots.txt is not known yet."""
        # The rules match a URL's path and query.  Its origin is no business of theirs, and
        # the stdlib unquotes a URL before splitting it again, which raises on a host that
        # holds an escape (http://a%5Bb/): so the origin given is a placeholder.
        parts = urlsplit(url)
        local = urlunsplit(("http", "origin", parts.path, parts.query, ""))
        return self.parsed[robots_url(url)].can_fetch(self.user_agent, local)

    def learn(self, url: str, response: Response | None) -> None:
        """Keep the rules of a fetched robots.txt (``response`` None: no response came).

        This never raises: a robots.txt is fetched once per origin, and recorded, whatever
        it holds; the lines it could not read are dropped, and named in ``unread``.
        """
        self.parsed[url], problem = parse_robots(response)
        # Only now: were a bug to raise above, the URL would still be pending, and the
        # failure's record (record_failure) would learn it, as a robots.txt with no answer.
        self.pending.discard(url)
        found = "no response" if response is None else f"status {response.status}"
        obeyed = "its rules obeyed" if readable(response) else "everything allowed"
        LOGGER.info("robots.txt %r: %s, %s", url, found, obeyed)
        if problem is not None:
            self.unread[url] = problem
            LOGGER.warning("%r: %s", url, problem)


def skipped(url: str) -> FetchStatistic:
    """Return the record of a URL that robots.txt forbids: never fetched, no tries."""
    return FetchStatistic(url, error=DISALLOWED, tries=0)
