"""Exercise delay: --delay S between the starts of two requests to one host, three styles.

Task N is stage N's `Crawler.polite`: a timer in stage 1, `yield from sleep(...)` in
stage 2, `await asyncio.sleep(...)` in stage 3 (see shared/tools/exercises/delay/README.md).
How long to wait is BaseCrawler.delay_before's answer, the same in every stage; each
test asks the server when the requests came, or times a crawl whose every try fails.
"""

from __future__ import annotations

import importlib
import itertools
import socket
import statistics

import pytest
from reasons import reason

from shared.crawling import Options
from shared.testsite import Site, serve
from shared.testsite.oracle import assert_matches_oracle

# Each stage is a task of its own: task 1 is stage 1, and so on.
STAGES = [
    pytest.param("stage1_callbacks", marks=pytest.mark.task(taskno=1), id="stage1"),
    pytest.param("stage2_generators", marks=pytest.mark.task(taskno=2), id="stage2"),
    pytest.param("stage3_asyncio", marks=pytest.mark.task(taskno=3), id="stage3"),
]
DELAY = 0.1
# A loaded machine may shift an arrival by a connect's worth of time, so a check asks for
# half the delay: starts that do not wait at all come a few milliseconds apart.
SLACK = DELAY / 2
# The whole span forgives one delay: a first request that starts late shortens it, since
# each start is booked DELAY after the one booked before it, not after the one that
# happened.  A crawl that waits once per worker, not per request, spans a quarter of it.
SPAN_SLACK = DELAY


@pytest.mark.parametrize("package", STAGES)
def test_the_server_sees_the_requests_start_delay_apart(package: str) -> None:
    """--delay 0.1 with four fetches allowed at once: still one start per 0.1 s."""
    crawl = importlib.import_module(package).crawl
    site = Site(pages=8, traps=False)
    with serve(site) as base_url:
        result = crawl([base_url], Options(max_tasks=4, delay=DELAY))
        assert_matches_oracle(result, site.expected(base_url))
    arrived = sorted(when for when, _, _ in site.arrivals)
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrived)]
    # The crawler spaces the starts; the server sees arrivals, which a busy machine can
    # shift by a connect's worth of time (one gap shrinks, the next grows).  So: the whole
    # span, and the typical gap, not the smallest one.
    span = arrived[-1] - arrived[0]
    assert span >= len(gaps) * DELAY - SPAN_SLACK, reason(
        "delay.too-fast", count=len(arrived), span=f"{span:.3f}", delay=DELAY
    )
    assert statistics.median(gaps) >= DELAY - SLACK, reason(
        "delay.the-requests-came-s-apart", value1=[round(g, 3) for g in gaps], value3=DELAY
    )


@pytest.mark.parametrize("package", STAGES)
def test_a_try_again_waits_its_turn_too(package: str) -> None:
    """Every try is a request: 3 tries of robots.txt, then 3 of the page, each 0.1 s apart."""
    crawl = importlib.import_module(package).crawl
    with socket.socket() as probe:  # a port nothing listens on: every try is refused at once
        probe.bind(("127.0.0.1", 0))
        root = f"http://127.0.0.1:{probe.getsockname()[1]}/"
    result = crawl([root], Options(max_tries=3, delay=DELAY))
    tries = {stat.url: stat.tries for stat in result.fetches}
    assert tries == {root + "robots.txt": 3, root: 3}, reason(
        "delay.the-tries-were-not-3", tries=tries
    )
    assert result.elapsed_s >= 5 * DELAY - SLACK, reason(
        "delay.6-tries-in-s-every", value1=f"{result.elapsed_s:.3f}", value3=DELAY
    )
