"""The part of a crawler that does not depend on the concurrency style.

Each stage's ``Crawler`` subclasses :class:`BaseCrawler` and adds only what the
chapter is about: how to wait for many sockets at once (``crawl``, ``work``,
``fetch``).  What a response means, which links to follow, how redirects coalesce,
how many pages may be fetched, what robots.txt allows, which failures are worth
another try and what is recorded live here, written once, so the three stages
cannot drift apart and ``diff`` between them shows only the mechanism.

None of this needs a lock, in any stage: all three run one thread, and a crawler is
only interrupted where it waits (a callback returning, a ``yield from``, an ``await``).

A stage's crawler imports what it builds on from here, the two types its signatures
name included: :class:`Response`, what a fetch returns, and :class:`CrawlResult`,
what a crawl returns (defined in shared/responses.py and shared/report.py).
"""

from __future__ import annotations

import ssl
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar

from shared.links import parse_links
from shared.log import Logger
from shared.report import CrawlResult, FetchStatistic, Progress
from shared.resolver import Resolver
from shared.responses import (
    MAX_BODY,
    Response,
    content_type,
    decode_body,
    is_parsed,
    is_redirect,
    redirect_target,
)
from shared.robots import Robots, robots_url, skipped
from shared.tls import certificate_error, ssl_context
from shared.urls import UrlRules, host_name, normalize

__all__ = [
    "LOGGER",
    "BaseCrawler",
    "CrawlResult",
    "Options",
    "ParseError",
    "Response",
    "describe",
    "host_key",
    "on_exit",
    "root_url",
]

LOGGER = Logger("crawler")


@dataclass(frozen=True, slots=True)
class Options:
    """The crawl's settings, the same for every stage (see shared/tools/cli.py for the flags)."""

    max_tasks: int = 10
    max_redirect: int = 10
    max_tries: int = 4
    exclude: str | None = None
    strict: bool = True
    timeout: float = 10.0
    max_pages: int | None = None
    fail_on: str | None = None
    progress: bool = False
    insecure: bool = False
    cafile: str | None = None
    ignore_robots: bool = False
    max_per_host: int | None = None  # None: a host may have all --max-tasks fetches
    delay: float = 0.0  # seconds between the starts of two requests to one host
    lang: str = "en"  # the progress line's language (--lang)

    def __post_init__(self) -> None:
        """Reject settings no crawl can run with, saying what to use instead."""
        for name, low in (("max_tasks", 1), ("max_redirect", 0), ("max_tries", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be >= {low} (got {getattr(self, name)})")
        if self.max_per_host is not None and self.max_per_host < 1:
            raise ValueError(f"max_per_host must be >= 1 (got {self.max_per_host})")
        if self.delay < 0:
            raise ValueError(f"delay must be >= 0 seconds (got {self.delay})")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds (got {self.timeout})")
        if self.max_pages is not None and self.max_pages < 1:
            raise ValueError(f"max_pages must be >= 1 (got {self.max_pages})")
        if self.insecure and self.cafile is not None:
            raise ValueError("insecure and cafile contradict each other: choose one")


class ParseError(Exception):
    """Raised on purpose by --fail-on, to show where each stage's traceback leads."""


def root_url(root: str) -> str:
    """Return a root as a normalised URL, adding http:// when it has no scheme.

    Raises ValueError naming the root when it is not an http(s) URL.
    """
    url = normalize(root if "://" in root else "http://" + root)
    if url is None:
        raise ValueError(f"not an http(s) URL: {root!r}")
    return url


def host_key(url: str) -> str:
    """Return the host that per-host limits count url under: its name, ports apart.

    As in the scope rule (shared/urls.py), a port does not make another host: the
    pages of example.com:8080 and example.com share one server, so they share one
    --max-per-host.
    """
    return host_name(url)


class on_exit:  # lower case, as contextlib.suppress: a class used like a function
    """A ``with`` block at whose end, however it ends, ``fn(*args)`` is called.

    Stage 2 gives a host's slot back with it (``with (yield from self.host_slot(url)):``),
    where stage 3's asyncio.Semaphore is a context manager of its own.
    """

    # A class, not a @contextmanager generator: one is held by every fetch in flight, and a
    # small object with slots takes a sixth of the memory of a generator and its wrapper.
    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., object], *args: object) -> None:
        self.fn, self.args = fn, args

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: object) -> None:
        self.fn(*self.args)


def describe(exc: BaseException) -> str:
    """Return an error message for a record: the exception's type and text.

    A certificate that does not verify is named by the ssl module's own error in
    every stage, even where a library wrapped it in one of its own.
    """
    exc = certificate_error(exc) or exc
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class BaseCrawler:
    """Bookkeeping shared by every stage: seen URLs, records, the page budget, robots.txt.

    A stage takes ``(url, redirects left)`` pairs from its queue.  If
    :meth:`robots_txt` names a robots.txt, the stage waits until it is known: the
    first page of an origin calls :meth:`begin_robots` and fetches it like any URL,
    later pages of the origin wait for that fetch.  Then the stage calls
    :meth:`begin`, fetches, and reports the outcome with :meth:`record_response`
    (which returns the pairs to queue next) or :meth:`record_failure`.

    With --max-per-host, a stage first waits, each in its own style, until the URL's
    host (:func:`host_key`) has fewer than ``max_per_host`` fetches in flight, robots.txt
    fetches included; only then does it call :meth:`begin`, so a URL waiting for its
    host is never counted in flight.
    """

    stage: ClassVar[str] = "base"

    def __init__(self, roots: Sequence[str], options: Options | None = None) -> None:
        """Prepare a crawl of ``roots`` (URLs, or host names that get http://)."""
        self.options = options = options or Options()
        self.max_tasks = options.max_tasks
        self.max_redirect = options.max_redirect
        self.max_tries = options.max_tries
        # Without --max-per-host a host may have every fetch in flight: --max-tasks is
        # then the per-host limit, one that never binds, and no stage needs a special case.
        self.max_per_host = options.max_per_host or options.max_tasks
        self.host_load: Counter[str] = Counter()  # host -> fetches in flight to it
        self.next_start: dict[str, float] = {}  # host -> when --delay lets its next request go
        self.roots = list(dict.fromkeys(root_url(root) for root in roots))
        self.rules = UrlRules(self.roots, strict=options.strict, exclude=options.exclude)
        self.seen_urls: set[str] = set(self.roots)
        self.done: list[FetchStatistic] = []
        self.in_flight: dict[str, float] = {}  # url -> when its fetch began
        self.requested = 0  # URLs claimed by begin(), for --max-pages
        self.progress = Progress(sys.stderr, lang=options.lang) if options.progress else None
        self.ssl_context = ssl_context(insecure=options.insecure, cafile=options.cafile)
        self.robots_rules = None if options.ignore_robots else Robots()  # None: --ignore-robots
        if options.insecure:
            LOGGER.warning(
                "--insecure: TLS certificates are NOT verified; anyone between us and a"
                " site can pretend to be it"
            )
        self.t0 = time.monotonic()

    @cached_property
    def resolver(self) -> Resolver:
        """Name resolution for the hand-made stages 1 and 2: in threads, once per host.

        Made on first use: stage 3 never asks, aiohttp resolves names for it.  The stage's
        loop watches the resolver's self-pipe, and closes it at the end of the crawl.
        """
        return Resolver()

    def now(self) -> float:
        """Seconds since the crawl began."""
        return time.monotonic() - self.t0

    def start_items(self) -> list[tuple[str, int]]:
        """The first ``(url, redirects left)`` pairs to queue: the roots."""
        return [(root, self.max_redirect) for root in self.roots]

    def pages_spent(self) -> bool:
        """Tell whether --max-pages pages have been claimed already."""
        return self.options.max_pages is not None and self.requested >= self.options.max_pages

    def robots_txt(self, url: str) -> str | None:
        """Return the robots.txt URL a stage must fetch, or wait for, before fetching url.

        None when there is nothing to wait for: robots.txt is ignored, the origin's
        rules are known already, or --max-pages is spent (url will not be fetched).
        """
        if self.robots_rules is None or self.pages_spent() or self.robots_rules.known(url):
            return None
        return robots_url(url)

    def begin_robots(self, url: str) -> None:
        """Claim the fetch of an origin's robots.txt: in flight, but outside --max-pages."""
        assert self.robots_rules is not None, "robots.txt is ignored in this crawl"
        self.robots_rules.pending.add(url)
        self.seen_urls.add(url)  # a link to it, found later, does not fetch it again
        self.in_flight[url] = self.now()
        self.host_load[host_key(url)] += 1

    def begin(self, url: str) -> bool:
        """Claim a URL for fetching, once its origin's robots.txt is known; False to skip it.

        A URL is skipped when --max-pages is spent (not recorded), when robots.txt
        forbids it (recorded, with no tries), or when it is its origin's robots.txt,
        fetched and recorded already.
        """
        if self.pages_spent():
            LOGGER.debug("skipping %r: --max-pages reached", url)
            return False
        if self.robots_rules is not None:
            if url in self.robots_rules.parsed:
                return False  # a root or a link that was its origin's robots.txt
            if not self.robots_rules.allows(url):
                why = self.robots_rules.why(url)  # which rule decided
                LOGGER.debug("skipping %r: %s", url, why)
                self.record(skipped(url, why))
                return False
        self.requested += 1
        self.in_flight[url] = self.now()
        self.host_load[host_key(url)] += 1
        return True

    def host_full(self, url: str) -> bool:
        """Tell whether url's host has --max-per-host fetches in flight already.

        Stage 1 asks this before it starts a fetch; stages 2 and 3 count with a Queue
        of tokens and a Semaphore of their own, and wait on those instead.
        """
        return self.host_load[host_key(url)] >= self.max_per_host

    def delay_before(self, url: str) -> float:
        """Book the start of a request to url's host; return the seconds to wait for it.

        --delay S keeps at least S seconds between the starts of two requests to one
        host, tries again included: a crawler's politeness towards other people's
        sites.  Each request books the first start free, S after the one booked before
        it, so requests that wait together go one after the other.  0 without --delay.
        """
        if not self.options.delay:
            return 0.0
        host, now = host_key(url), self.now()
        start = max(now, self.next_start.get(host, now))
        self.next_start[host] = start + self.options.delay
        return start - now

    def handshake_done(self, url: str, sock: ssl.SSLSocket) -> None:
        """Log a finished TLS handshake (stages 1 and 2; aiohttp does stage 3's unseen)."""
        checked = "not verified" if self.options.insecure else "verified"
        LOGGER.info("TLS handshake for %r done: %s, certificate %s", url, sock.version(), checked)

    def _learn_robots(self, url: str, response: Response | None) -> bool:
        """If url is a robots.txt being fetched, learn its rules and return True."""
        if self.robots_rules is None or url not in self.robots_rules.pending:
            return False
        self.robots_rules.learn(url, response)  # if it cannot read it: unread_robots(url)
        return True

    def record(self, stat: FetchStatistic) -> None:
        """Keep a finished URL's record; it is no longer in flight."""
        if self.in_flight.pop(stat.url, None) is not None:  # not skipped before it began
            self.host_load[host_key(stat.url)] -= 1
        self.done.append(stat)
        if self.progress is not None:
            queued = len(self.seen_urls) - len(self.done) - len(self.in_flight)
            self.progress.update(self.now(), len(self.done), max(queued, 0), len(self.in_flight))

    def retrying(self, url: str, tries: int, exc: BaseException) -> None:
        """Note a failed try that will be tried again (or given up by the caller)."""
        LOGGER.info("try %d for %r raised %s", tries, url, describe(exc))

    def give_up(self, tries: int, exc: BaseException) -> bool:
        """Tell whether a failed try was the last: --max-tries reached, or no use trying again.

        A certificate that does not verify fails the same way every time, so it is
        recorded at once rather than asked for --max-tries times.
        """
        return tries >= self.max_tries or certificate_error(exc) is not None

    def record_bug(self, url: str, exc: Exception) -> None:
        """Record an exception nobody foresaw while fetching url: log its traceback, one try.

        A bug in the crawler, or a page that breaks the link parser (--fail-on makes
        one): the URL gets an error record and the crawl goes on.  Stages 2 and 3 call
        this from their workers, and its traceback shows the whole chain of coroutines.
        Stage 1's callback_failed takes the same two steps itself, where what its
        traceback lacks (stack ripping) is the lesson.
        """
        LOGGER.error("while fetching %r", url, exc_info=exc)
        self.record_failure(url, 1, exc)

    def failed_try(self, url: str, tries: int, exc: BaseException) -> bool:
        """Note a failed try of url; return True if it was the last, url then recorded as failed.

        Another try follows (False) unless --max-tries is reached or there is no use
        trying again (:meth:`give_up`).  The decision is the same in every stage; only
        how a stage starts the next try is its own.
        """
        if isinstance(exc, TimeoutError) and not str(exc):  # asyncio.timeout's (stage 3)
            exc = TimeoutError(f"no complete response within {self.options.timeout} s")
        if self.give_up(tries, exc):
            self.record_failure(url, tries, exc)
            return True
        self.retrying(url, tries, exc)
        return False

    def record_failure(self, url: str, tries: int, exc: BaseException) -> None:
        """Record a URL for which no complete response came back.

        A robots.txt that could not be fetched allows everything.
        """
        LOGGER.error("%r failed after %d tries: %s", url, tries, describe(exc))
        self._learn_robots(url, None)
        self.record(FetchStatistic(url, error=describe(exc), tries=tries))

    def parse_links(self, url: str, text: str) -> set[str]:
        """Return the links of a page that this crawl may follow.

        With --fail-on, raise for URLs containing that string: a stand-in for a bug in
        the parser, to compare what each stage's traceback tells (stack ripping).
        """
        if self.options.fail_on and self.options.fail_on in url:
            raise ParseError(f"--fail-on {self.options.fail_on!r} matched {url}")
        return {link for link in parse_links(url, text) if self.rules.allowed(link)}

    def record_response(
        self, url: str, max_redirect: int, response: Response, tries: int
    ) -> list[tuple[str, int]]:
        """Record a complete response and return the ``(url, redirects left)`` pairs to queue.

        Redirects are followed by the crawler itself, as in the chapter, so that paths
        which join on one target fetch it once ("redirect coalescing").  Only 200
        responses of a parsed type are read for links.  A robots.txt is obeyed and
        recorded, never read for links nor followed (its error: :meth:`unread_robots`).
        """
        media_type, charset = content_type(response)
        stat = FetchStatistic(url, response.status, content_type=media_type, tries=tries)
        robots = self._learn_robots(url, response)
        if response.too_large:
            self.record(replace(stat, error=f"body larger than {MAX_BODY} bytes"))
            return []
        stat = replace(stat, size=len(response.body))
        if robots:
            self.record(replace(stat, error=self.unread_robots(url)))
            return []
        if is_redirect(response.status):
            next_url = redirect_target(url, response)
            self.record(replace(stat, next_url=next_url))
            if next_url is None or max_redirect <= 0 or not self.rules.allowed(next_url):
                return []
            if next_url in self.seen_urls:
                return []  # We have been down this path before: coalesce.
            LOGGER.info("redirect to %r from %r", next_url, url)
            self.seen_urls.add(next_url)
            return [(next_url, max_redirect - 1)]
        if response.status != 200 or not is_parsed(media_type):
            self.record(stat)
            return []
        text, encoding = decode_body(response.body, charset)
        links = self.parse_links(url, text)
        new = links - self.seen_urls
        self.seen_urls.update(new)
        self.record(replace(stat, encoding=encoding, num_urls=len(links), num_new_urls=len(new)))
        return [(link, self.max_redirect) for link in sorted(new)]

    def unread_robots(self, url: str) -> str | None:
        """Why the robots.txt url could not be read at all, for its record; None: it was."""
        return None if self.robots_rules is None else self.robots_rules.unread.get(url)

    def result(self, *, interrupted: bool = False) -> CrawlResult:
        """Return the crawl's result; after Ctrl-C, URLs still in flight are recorded too."""
        if self.progress is not None:
            self.progress.close()
        fetches = list(self.done)
        if interrupted:
            fetches += [
                FetchStatistic(url, error="interrupted before the response", tries=1)
                for url in self.in_flight
            ]
        result = CrawlResult(
            stage=self.stage,
            roots=self.roots,
            fetches=fetches,
            elapsed_s=self.now(),
            interrupted=interrupted,
            max_tasks=self.max_tasks,
        )
        return result
