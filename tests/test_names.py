"""Host names whose DNS misbehaves: no stage waits for a lookup on its loop's thread.

``getaddrinfo`` blocks, and a selector cannot wait for it: stages 1 and 2 ask it in a
thread (shared/resolver.py), stage 3 gives aiohttp the same thread (shared/aiohttp_wire.py).
Each host is looked up once per crawl, its failure remembered too.  The names come from
the test site's catalogue (shared/testsite/names.py), which counts every lookup.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import ModuleType

import pytest

from shared.crawling import Options
from shared.testsite import Site, serve
from shared.testsite.names import HELD, SITE, UNKNOWN, fake_names


def port_of(base_url: str) -> str:
    return base_url.rstrip("/").rpartition(":")[2]


def test_a_held_lookup_does_not_hold_the_other_hosts(stage: ModuleType) -> None:
    """While held.test's lookup waits, every page of the site is fetched; then it fails.

    The lookup is released by the site itself, once it has seen all its pages requested:
    a crawler that waited for the lookup on its loop's thread could fetch none of them, and
    the lookup would end by the name service's own limit instead.
    """
    site = Site(pages=10, traps=False)
    with serve(site) as base_url, fake_names(hold_limit=10) as names:
        held = f"http://{HELD}:{port_of(base_url)}/"
        pages = set(site.expected(base_url, ignore_robots=True))
        base = base_url.rstrip("/")

        def release_when_the_site_is_crawled() -> None:
            while not names.released.is_set():
                if {base + path for path in site.requests} >= pages:
                    names.release()
                time.sleep(0.01)

        watcher = threading.Thread(target=release_when_the_site_is_crawled, daemon=True)
        watcher.start()
        options = Options(ignore_robots=True, max_tries=1, timeout=30)
        records = stage.crawl([held, base_url], options).by_url()
        names.release()
        watcher.join()
    assert not names.timed_out, "the held lookup kept the site's pages waiting"
    assert set(records) == pages | {held}
    # Each stage words the error its own way (aiohttp's ClientConnectorDNSError in stage 3).
    assert "Temporary failure in name resolution" in (records[held].error or "")
    assert names.lookups == {HELD: 1}


@pytest.mark.parametrize("name", [UNKNOWN, HELD])
def test_ten_urls_of_a_failing_name_cost_one_lookup(stage: ModuleType, name: str) -> None:
    """Two tries each of ten URLs: one lookup, its failure (or its wait) shared by all.

    unknown.test fails at once; held.test never answers within the crawl, so each try
    ends by --timeout, and a later try waits for the same lookup rather than start one.
    """
    urls = [f"http://{name}:8/p/{i}" for i in range(10)]
    with fake_names() as names:
        result = stage.crawl(urls, Options(ignore_robots=True, max_tries=2, timeout=0.3))
        threads = list(names.threads)
    assert names.lookups == {name: 1}
    assert sorted(result.urls) == sorted(urls)
    failed_as = "Name or service not known" if name == UNKNOWN else "TimeoutError"
    for fetch in result.fetches:
        assert fetch.tries == 2 and fetch.error is not None and failed_as in fetch.error, fetch
    # A lookup that never ends is left in a daemon thread: it cannot hold the program's exit.
    assert all(thread.daemon for thread in threads), threads


def test_a_host_is_looked_up_once_per_crawl(stage: ModuleType) -> None:
    """A name that resolves: every page of the site under it, one lookup."""
    site = Site(pages=10, traps=False)
    with serve(site) as base_url, fake_names() as names:
        root = f"http://{SITE}:{port_of(base_url)}/"
        result = stage.crawl([root], Options(ignore_robots=True))
    # (Not the oracle's count: a link or two of the site names 127.0.0.1, another host here.)
    assert len(result.fetches) > 5 and all(f.status == 200 for f in result.fetches), result
    assert names.lookups == {SITE: 1}


def test_ctrl_c_during_a_held_lookup_ends_the_crawl(stage: ModuleType) -> None:
    """Ctrl-C while the only fetch waits for DNS: the crawl ends, its URL recorded.

    The lookup is held for longer than the test waits: the crawl must end without it.
    """
    held = f"http://{HELD}:8/"
    with fake_names(hold_limit=60) as names:

        def press_once_asked() -> None:
            if names.asked.wait(30):
                time.sleep(0.2)
                os.kill(os.getpid(), signal.SIGINT)

        press = threading.Thread(target=press_once_asked)
        press.start()
        result = stage.crawl([held], Options(ignore_robots=True, timeout=60))
        pending = not (names.released.is_set() or names.timed_out)
        press.join()
    assert pending, "the crawl ended only once the lookup did"
    assert result.interrupted
    assert result.urls == {held}
    [fetch] = result.fetches
    assert fetch.error == "interrupted before the response", fetch
