"""robots.txt, the same for every stage: where it lives, what it says, what a skip looks like.

A site asks crawlers, in ``/robots.txt`` at the root of each origin (scheme, host and
port), to stay out of some paths.  Each stage fetches that file with its own machinery
before the first page of the origin and waits for it; everything else is decided here,
once, as RFC 9309 reads the file: the groups naming our agent merged, or else those
naming ``*`` (2.2.1); ``*`` and a closing ``$`` in paths (2.2.3); and, of the rules that
match a path, the longest one decides, an Allow winning a tie (2.2.2).

Why our own reader: RFC 9309's rules fit in a page (`read_group`, `Rule`), and a parser
from the package index would bring the standard library's ``logging`` into stages 1 and
2, and with it ``threading``, which their lesson does without.  The suite holds this
reader to Protego, Scrapy's parser, on generated files (tests/test_shared.py).

What a check costs
------------------
A reader that tries every rule of the group for every URL costs O(rules in the file):
500 KiB of rules made every URL walk tens of thousands of them.  So :class:`Rules` files
each rule once, under its *literal prefix*, the text before its first ``*`` (or its
closing ``$``).  A rule can only match a path that starts with its literal prefix, so a
check looks up the path's own prefixes, one dict look-up for each length some literal
prefix has (no more than the path is long), and matches only the rules filed there,
each in time linear in the path (`Rule.matches` never backtracks).  A check costs
O(min(L, K) + R * L): L the path's length, K the number of distinct prefix lengths, R
the rules whose literal prefix starts the path.  However many rules the file holds for
*other* paths, a check never touches them.  The one shape it cannot make cheap is many
rules sharing one literal prefix that starts every path (``Disallow: /*a1``, ``/*a2``
...): each must be tried, as in every parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

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


#: Octets a path or a pattern keeps as they are; every other one is written %XX.
UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")


def one_spelling(text: str, kept: bytes) -> str:
    """``text`` with its percent-encoding made one spelling (RFC 9309 2.2.2 compares octets).

    Every escape is decoded but those of ``/`` and ``%`` (and in a pattern, ``*``), then
    every octet but the unreserved ones and ``kept`` is escaped, in upper
    case: ``/caf%c3%a9``, ``/café`` and ``/caf%C3%A9`` are one path.
    """
    raw = text.encode("utf-8", errors="replace")
    out = []
    at = 0
    for found in ESCAPE.finditer(raw):
        out.append(_escaped(raw[at : found.start()], kept))
        octet = int(found[1], 16)
        decoded = bytes([octet])
        # "/" and "%" keep their escapes (decoded, they would change what the path says),
        # and so does a pattern's "*" (decoded, it would become a wildcard).
        stays = decoded in (b"/", b"%") or (decoded == b"*" and b"*" in kept)
        out.append(b"%%%02X" % octet if stays else _escaped(decoded, kept))
        at = found.end()
    out.append(_escaped(raw[at:], kept))
    return b"".join(out).decode("ascii")


def _escaped(raw: bytes, kept: bytes) -> bytes:
    return b"".join(bytes([o]) if o in UNRESERVED or o in kept else b"%%%02X" % o for o in raw)


def path_of(url: str) -> str:
    """The part of a URL the rules match: its path and query, in one spelling."""
    parts = urlsplit(url.partition("#")[0])
    path = parts.path + (f"?{parts.query}" if "?" in url.partition("#")[0] else "")
    path = one_spelling(path, b"/%=")
    return path if path.startswith("/") else f"/{path}"


@dataclass(frozen=True)
class Rule:
    """One Allow or Disallow line of our group, its path in one spelling (`one_spelling`):
    ``*`` matches any octets, a closing ``$`` the end of the path (RFC 9309 2.2.3)."""

    allow: bool
    pattern: str  # e.g. "/*.pdf$"
    parts: tuple[str, ...] = field(init=False, compare=False)  # the pattern split at each *

    def __post_init__(self) -> None:
        """Split the pattern once, for `matches`."""
        body = self.pattern.removesuffix("$")
        object.__setattr__(self, "parts", tuple(body.split("*")))

    def __str__(self) -> str:
        """The rule as a robots.txt line: ``Disallow: /*.pdf$``."""
        return f"{'Allow' if self.allow else 'Disallow'}: {self.pattern}"

    def matches(self, path: str) -> bool:
        """Tell whether the rule matches a path (`path_of`), in time linear in the path.

        Between two ``*`` the text may be found anywhere after what came before it, so
        taking the first place it is found never loses a match: no backtracking.
        """
        first, *middle = self.parts
        if not path.startswith(first):
            return False
        at = len(first)
        if not middle:  # no * at all: a prefix, or with $ the whole path
            return at == len(path) or not self.pattern.endswith("$")
        *middle, last = middle
        for part in middle:
            found = path.find(part, at)
            if found < 0:
                return False
            at = found + len(part)
        if self.pattern.endswith("$"):
            return path.endswith(last) and len(path) - len(last) >= at
        return path.find(last, at) >= 0

    def rank(self) -> tuple[int, bool]:
        """Longer wins (RFC 9309 2.2.2: the most octets); on a tie, Allow wins."""
        return len(self.pattern), self.allow


def read_group(text: str, user_agent: str = USER_AGENT) -> list[Rule]:
    """The rules of a robots.txt that apply to ``user_agent``, as RFC 9309 2.2.1 picks them.

    A group is one or more ``User-agent`` lines and the rules after them.  The groups
    naming our product token (``crawler500``, in any case) are merged; without one, the
    groups naming ``*`` are; without those, no rule applies.  Other lines (a
    ``Sitemap``, a ``Crawl-delay``, a line that reads as nothing) are ignored, and so is
    a rule with an empty path.
    """
    token = user_agent.partition("/")[0].strip().lower()
    groups: list[tuple[set[str], list[Rule]]] = []
    in_agents = False
    for line in text.splitlines():
        key, colon, value = line.partition("#")[0].partition(":")
        key, value = key.strip().lower(), value.strip()
        if not colon:
            continue
        if key == "user-agent":
            if not in_agents:
                groups.append((set(), []))
            # "crawler500/1.0", copied from our User-Agent header, names us too.
            groups[-1][0].add(value.partition("/")[0].strip().lower())
            in_agents = True
        elif key in ("allow", "disallow") and groups:
            in_agents = False
            if value:
                anchor = "$" if value.endswith("$") else ""
                pattern = one_spelling(value.removesuffix("$"), b"/%=*") + anchor
                groups[-1][1].append(Rule(key == "allow", pattern))
        elif groups:
            in_agents = False
    for wanted in (token, "*"):
        merged = [rule for agents, rules in groups if wanted in agents for rule in rules]
        if any(wanted in agents for agents, _ in groups):
            return merged
    return []


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
        self.index: dict[str, list[Rule]] = {}
        for rule in dict.fromkeys(read_group(text, user_agent) if text else ()):
            self.index.setdefault(literal_prefix(rule.pattern), []).append(rule)
        for bucket in self.index.values():
            bucket.sort(key=Rule.rank, reverse=True)  # so the first match is the bucket's best
        self.lengths = sorted({len(prefix) for prefix in self.index})
        self.checked = 0
        self.looked_up = 0

    def decide(self, url: str) -> Rule | None:
        """Return the rule that decides for url (None: no rule matches, so it is allowed)."""
        path = path_of(url)  # path and query, in the spelling of the patterns
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
