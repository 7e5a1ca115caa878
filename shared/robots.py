"""robots.txt, the same for every stage: where it lives, what it says, what a skip looks like.

A site asks crawlers, in ``/robots.txt`` at the root of each origin (scheme, host and
port), to stay out of some paths.  Each stage fetches that file with its own machinery
before the first page of the origin and waits for it; everything else is decided here,
once.  Protego, Scrapy's parser, reads the file as RFC 9309 says: the groups naming the
same agent merged (2.2.1), ``*`` and a closing ``$`` in paths (2.2.3), and, of the
rules that match a path, the longest one decides, an Allow winning a tie (2.2.2).

What a check costs
------------------
Protego tries the rules of a group one after the other, so a check would cost
O(rules in the file): 500 KiB of rules made every URL walk tens of thousands of them.
So :class:`Rules` compiles the group once per origin into an index: each rule is filed
under its *literal prefix*, the text before its first ``*`` (or its closing ``$``).
A rule can only match a path that starts with its literal prefix, so a check looks up
the path's own prefixes, one dict look-up for each length some literal prefix has (no
more than the path is long), and matches only the rules filed there.  A check costs
O(min(L, K) + R): L the path's length, K the number of distinct prefix lengths, R the
rules whose literal prefix starts the path, tried longest first within each prefix.
However many rules the file holds for *other* paths, a check never touches them.  The
one shape it cannot make cheap is many rules sharing one literal prefix that starts
every path (``Disallow: /*a1``, ``/*a2`` ...): each must be tried, as in every parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from protego import Protego
from protego._urlpattern import _URLPattern
from protego._utils import _quote_path

from shared import USER_AGENT
from shared.log import Logger
from shared.report import FetchStatistic
from shared.responses import Response

LOGGER = Logger("crawler")

#: The error of the record a URL gets when robots.txt forbids it; the rule that decided
#: follows, in brackets: ``disallowed by robots.txt (Disallow: /*.pdf)``.
DISALLOWED = "disallowed by robots.txt"


def robots_url(url: str) -> str:
    """Return the robots.txt URL of a normalised URL's origin: scheme://host[:port]/robots.txt."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))


#: How much of a robots.txt is read: RFC 9309 (2.5) asks for at least 500 KiB, and
#: Google's crawler reads that much and ignores the rest.
MAX_ROBOTS = 500 * 1024


@dataclass(frozen=True)
class Rule:
    """One Allow or Disallow line of our group, as the parser reads it (percent-encoding
    made one spelling), with the parser's own matcher for it."""

    allow: bool
    pattern: str  # e.g. "/*.pdf$"
    matcher: _URLPattern = field(compare=False)  # the parser's own, for .match(path)

    def __str__(self) -> str:
        """The rule as a robots.txt line: ``Disallow: /*.pdf$``."""
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    def matches(self, path: str) -> bool:
        """Tell whether the rule matches a path (and query), quoted as the parser quotes it."""
        return self.matcher.match(path)

    def rank(self) -> tuple[int, bool]:
        """Longer wins (RFC 9309 2.2.2: the most octets); on a tie, Allow wins."""
        return len(self.pattern), self.allow


def literal_prefix(pattern: str) -> str:
    """The part of a pattern that a path must start with: before ``*``, without a closing ``$``."""
    return pattern.partition("*")[0].removesuffix("$")


class Rules:
    """The rules of one robots.txt for one crawler, indexed by literal prefix.

    ``checked`` counts the rules tried so far, and ``looked_up`` the index's look-ups:
    the suite holds a check's work to a bound with them, whatever the file's size.
    """

    def __init__(self, text: str = "", user_agent: str = USER_AGENT) -> None:
        """Read ``text`` (a robots.txt, already capped) and keep the group for ``user_agent``."""
        # Protego picks the group (ours by name, else ``*``; groups of one name merged)
        # but keeps its rules to itself: these names (and _quote_path, _URLPattern) are
        # not its public API, which is why pyproject.toml holds it below its next minor
        # version, and tests/test_shared.py fails first if they change.
        group = Protego.parse(text)._get_matching_rule_set(user_agent) if text else None
        self.index: dict[str, list[Rule]] = {}
        for rule in dict.fromkeys(group._rules if group is not None else ()):
            found = Rule(rule.field == "allow", rule.value._pattern, rule.value)
            self.index.setdefault(literal_prefix(found.pattern), []).append(found)
        for bucket in self.index.values():
            bucket.sort(key=Rule.rank, reverse=True)  # so the first match is the bucket's best
        self.lengths = sorted({len(prefix) for prefix in self.index})
        self.checked = 0
        self.looked_up = 0

    def decide(self, url: str) -> Rule | None:
        """Return the rule that decides for url (None: no rule matches, so it is allowed)."""
        path = _quote_path(url)  # path and query, quoted as the patterns were
        best: Rule | None = None
        for length in self.lengths:
            if length > len(path):
                break
            self.looked_up += 1
            for rule in self.index.get(path[:length], ()):
                self.checked += 1
                if rule.matches(path):
                    if best is None or rule.rank() > best.rank():
                        best = rule
                    break  # the others here are shorter: they cannot win
        return best

    def allows(self, url: str) -> bool:
        """Tell whether robots.txt lets us fetch url (robots.txt itself is always allowed)."""
        rule = self.decide(url)
        return rule is None or rule.allow or urlsplit(url).path == "/robots.txt"


def parse_robots(response: Response | None) -> Rules:
    """Return the rules a robots.txt response sets for us.

    Only a complete 200 response is read, its first :data:`MAX_ROBOTS` bytes.  Anything
    else allows everything: a missing file (4xx), and one that cannot be read (no
    response at all, 5xx, a redirect, a body too large); a body that is not robots.txt at
    all holds no rules, and so allows everything too.  (RFC 9309 asks a crawler to keep
    away from a site whose robots.txt answers 5xx; we keep the simpler rule and say so in
    REAL_WEB.md.)  A line the parser cannot read is ignored and the rest obeyed, as RFC
    9309 asks.
    """
    if not readable(response):
        return Rules()  # no rule at all: everything is allowed
    assert response is not None
    # RFC 9309: robots.txt is UTF-8.  Bytes that are not cannot spell a rule; a byte order
    # mark is no part of the first line ("utf-8-sig" drops it), as Google's parser reads it.
    return Rules(response.body[:MAX_ROBOTS].decode("utf-8-sig", errors="replace"))


def readable(response: Response | None) -> bool:
    """Tell whether a robots.txt response is one whose rules are read: a complete 200."""
    return response is not None and response.status == 200 and not response.too_large


class Robots:
    """What each origin's robots.txt allows, as far as the crawl has learned it.

    ``parsed`` maps a robots.txt URL to its rules once the fetch has finished;
    ``pending`` holds the robots.txt URLs being fetched now; ``unread`` maps a robots.txt
    URL to why it could not be read at all, for its record.
    """

    def __init__(self, user_agent: str = USER_AGENT) -> None:
        """Start knowing nothing; ``user_agent`` picks our group of rules in each file."""
        self.user_agent = user_agent
        self.parsed: dict[str, Rules] = {}
        self.pending: set[str] = set()
        self.unread: dict[str, str] = {}

    def known(self, url: str) -> bool:
        """Tell whether the rules for url's origin have been learned."""
        return robots_url(url) in self.parsed

    def allows(self, url: str) -> bool:
        """Tell whether url may be fetched; KeyError if its robots.txt is not known yet."""
        return self.parsed[robots_url(url)].allows(url)

    def why(self, url: str) -> str:
        """The error of the record of a URL robots.txt forbids, naming the rule that decided."""
        return f"{DISALLOWED} ({self.parsed[robots_url(url)].decide(url)})"

    def learn(self, url: str, response: Response | None) -> None:
        """Keep the rules of a fetched robots.txt (``response`` None: no response came).

        This never raises: a robots.txt is fetched once per origin, and recorded, whatever
        it holds.  Were the parser to fail on a file, the file allows everything, and
        ``unread`` says why.
        """
        try:
            self.parsed[url] = parse_robots(response)
        except Exception as exc:  # a bug of the parser's must not stop the crawl
            self.parsed[url] = Rules()
            self.unread[url] = f"robots.txt not read: {type(exc).__name__}: {exc}"
            LOGGER.warning("%r: %s", url, self.unread[url])
        # Only now: were a bug to raise above, the URL would still be pending, and the
        # failure's record (record_failure) would learn it, as a robots.txt with no answer.
        self.pending.discard(url)
        found = "no response" if response is None else f"status {response.status}"
        obeyed = "its rules obeyed" if readable(response) else "everything allowed"
        LOGGER.info("robots.txt %r: %s, %s", url, found, obeyed)


def skipped(url: str, why: str = DISALLOWED) -> FetchStatistic:
    """Return the record of a URL that robots.txt forbids: never fetched, no tries."""
    return FetchStatistic(url, error=why, tries=0)
