"""A second opinion: stage 3 against a thread pool on a site and a pool that are not ours.

``python -m shared.tools.bench.independent`` checks the benchmark's two figures for stage 3
with nothing of the benchmark's own: its site, its thread pool and its floor are written
here, in a few lines each, and share no code with shared/testsite or threaded.py.

* The site: a plain asyncio server (no aiohttp, no HTTP library).  Page ``/p/N`` links to
  its parent and to pages ``10N+1`` to ``10N+10``: a tree of --pages pages, each sent
  after --latency seconds.  ``/race`` links to --race pages ``/w/K``, each sent after
  --race-delay seconds.  Connections are kept alive for as long as the client likes.
* The thread pool: ``concurrent.futures.ThreadPoolExecutor`` with --max-tasks threads,
  each with its own kept-alive ``http.client`` connection, links found by a regular
  expression: what one would write without this project.
* Throughput: pages per second over the tree, stage 3 (its ``crawl``, in this process)
  against the thread pool.
* The race: every ``/w/K`` at once (--max-tasks = --race), stage 3's time over the floor,
  the time a bare client (asyncio streams, one connection per page, no parsing) takes
  for the same fetches in the same run: no crawler can finish sooner on this machine.
  Beside it, a plain aiohttp session fetching the same pages with nothing else to do:
  how much of stage 3's time over the floor is aiohttp's own, and the floor stage 3's
  target is set against (within AIOHTTP_RACE_TARGET, 1.2x), since every fetch
  of stage 3 goes through that library.

Each figure is the median of --runs runs, crawlers alternated.  The site runs in a child
process on one core, the crawlers in this one, on the other (where there are two).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urljoin, urlsplit

from shared.tools.bench.measure import ROOT, core_pair, pin

#: Stage 3's race target: within this of a plain aiohttp session's time for the same
#: fetches, the floor its library sets (the site's floor is for stages 1 and 2: bench.py).
AIOHTTP_RACE_TARGET = 1.2

FANOUT = 10
FILLER = b"<p>" + b"Some words to read on every page. " * 30 + b"</p>\n"


# --------------------------------------------------------------------------- the site


def page(path: str, pages: int, race: int) -> tuple[bytes, bool] | None:
    """The body of a path, and whether it is a race page (sent after --race-delay); or None."""
    if path == "/race":
        links = [f"/w/{k}" for k in range(race)]
    elif path.startswith("/w/") and path[3:].isdigit() and int(path[3:]) < race:
        return b"<html><body>" + FILLER + b"</body></html>", True
    elif path.startswith("/p/") and path[3:].isdigit() and int(path[3:]) < pages:
        n = int(path[3:])
        kids = range(FANOUT * n + 1, min(FANOUT * n + FANOUT + 1, pages))
        links = [f"/p/{(n - 1) // FANOUT}"] * (n > 0) + [f"/p/{k}" for k in kids]
    else:
        return None
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links).encode()
    return b"<html><body>" + FILLER + anchors + b"</body></html>", False


async def serve(pages: int, latency: float, race: int, race_delay: float) -> None:
    """Serve the site on 127.0.0.1, print its port, run until stdin closes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # one request after another: the connection is kept alive
                head = await reader.readuntil(b"\r\n\r\n")
                found = page(head.split(b" ", 2)[1].decode("ascii", "replace"), pages, race)
                status, body = (b"200 OK", found[0]) if found else (b"404 Not Found", b"")
                await asyncio.sleep(race_delay if found and found[1] else latency)
                writer.write(
                    b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client closed its connection, or sent garbage
        finally:
            writer.close()

    # The kernel caps the backlog (net.core.somaxconn); asked high so a race is not refused.
    server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=65535)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# --------------------------------------------------------------------------- the crawlers

HREF = re.compile(r'href="([^"]+)"')


def crawl_threads(root: str, max_tasks: int) -> int:
    """Crawl from root with a pool of threads on http.client; return the pages fetched."""
    host, port = urlsplit(root).hostname or "", urlsplit(root).port or 80
    lock, done, local = threading.Lock(), threading.Event(), threading.local()
    seen, counts = {root}, {"left": 1, "pages": 0}
    pool = ThreadPoolExecutor(max_tasks)

    def fetch(url: str) -> None:
        links: list[str] = []
        ok = False
        try:
            if not hasattr(local, "conn"):
                local.conn = http.client.HTTPConnection(host, port, timeout=60)
            local.conn.request("GET", urlsplit(url).path)
            response = local.conn.getresponse()
            body = response.read()
            ok = response.status == 200
            if ok:
                links = [urljoin(url, link) for link in HREF.findall(body.decode())]
        except (OSError, http.client.HTTPException):
            del local.conn  # no try again: the harness's site never drops a connection
            links = []
        with lock:  # every thread may find the same link: one lock around seen and counts
            new = [link for link in links if link not in seen]
            seen.update(new)
            counts["pages"] += ok
            counts["left"] += len(new) - 1
            if counts["left"] == 0:
                done.set()
        for link in new:
            pool.submit(fetch, link)

    pool.submit(fetch, root)
    done.wait(timeout=60)  # a crawler that lost a link would wait forever: its count is short
    pool.shutdown(wait=False, cancel_futures=True)
    return counts["pages"]


def crawl_stage3(root: str, max_tasks: int) -> int:
    """Crawl from root with stage 3; return the pages it fetched with status 200."""
    from shared.crawling import Options
    from stage3_asyncio.crawler import crawl

    options = Options(max_tasks=max_tasks, ignore_robots=True, timeout=60, max_tries=1)
    return sum(1 for fetch in crawl([root], options).fetches if fetch.status == 200)


def bare_race(root: str, size: int) -> int:
    """Fetch /w/0 ... /w/size-1 all at once, a connection each, no parsing: the floor."""
    host, port = urlsplit(root).hostname or "", urlsplit(root).port or 80

    async def one(k: int) -> int:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(f"GET /w/{k} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await reader.readexactly(length)
        writer.close()
        return 1

    async def race() -> int:
        return sum(await asyncio.gather(*(one(k) for k in range(size))))

    return asyncio.run(race())


def aiohttp_race(root: str, size: int) -> int:
    """Fetch /race's pages all at once with a plain aiohttp session: aiohttp's own floor.

    What a few lines of aiohttp, as its documentation writes them, cost for these
    fetches, with no crawler around them: no queue, no records, no parsing.
    """
    import aiohttp

    async def race() -> int:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=size)) as session:

            async def one(k: int) -> int:
                async with session.get(f"{root}/w/{k}") as response:
                    await response.read()
                    return int(response.status == 200)

            return sum(await asyncio.gather(*(one(k) for k in range(size))))

    return asyncio.run(race())


# --------------------------------------------------------------------------- the runs


def timed(run: Callable[[], int]) -> tuple[float, int]:
    """Seconds a crawl took, and its pages."""
    started = time.perf_counter()
    pages = run()
    return time.perf_counter() - started, pages


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Serve the site, run everything --runs times, return the figures."""
    site_core, crawler_core = core_pair(not args.no_pin)
    argv = [sys.executable, "-m", "shared.tools.bench.independent", "--serve"]
    argv += [f"--pages={args.pages}", f"--latency={args.latency}"]
    argv += [f"--race={args.race}", f"--race-delay={args.race_delay}"]
    site = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert site.stdout is not None
    url = f"http://127.0.0.1:{int(site.stdout.readline())}"
    pin(site.pid, site_core)
    pin(0, crawler_core)
    tree, race = url + "/p/0", url + "/race"
    crawls: dict[str, Callable[[], int]] = {
        "stage3_asyncio": lambda: crawl_stage3(tree, args.max_tasks),
        "threads": lambda: crawl_threads(tree, args.max_tasks),
        "race stage3_asyncio": lambda: crawl_stage3(race, args.race),
        "race floor": lambda: bare_race(url, args.race),
        "race plain aiohttp": lambda: aiohttp_race(url, args.race),
    }
    # What each must fetch, with status 200: a run that misses a page is not a fair run.
    wanted = {"stage3_asyncio": args.pages, "threads": args.pages}
    wanted.update({"race stage3_asyncio": args.race + 1, "race floor": args.race})
    wanted["race plain aiohttp"] = args.race
    figures: dict[str, list[float]] = {name: [] for name in crawls}
    try:
        crawl_stage3(tree, 10)  # imports and first use out of the timed runs
        for number in range(args.runs):
            names = [*crawls]
            for name in names[number % 2 :] + names[: number % 2]:  # who goes first alternates
                seconds, pages = timed(crawls[name])
                if pages != wanted[name]:
                    raise SystemExit(f"{name}: {pages} pages of {wanted[name]}: not a fair run")
                figures[name].append(round(seconds, 3))
                print(f"  run {number + 1} {name}: {seconds:.2f} s", file=sys.stderr, flush=True)
    finally:
        site.communicate(b"")
    med = {name: statistics.median(values) for name, values in figures.items()}
    return {
        "options": {k: v for k, v in vars(args).items() if k not in ("serve", "json")},
        "seconds": figures,
        "pages_per_s": {n: round(args.pages / med[n], 1) for n in ("stage3_asyncio", "threads")},
        "s1_ratio": round(med["threads"] / med["stage3_asyncio"], 3),
        "race_ratio": round(med["race stage3_asyncio"] / med["race floor"], 3),
        "aiohttp_ratio": round(med["race plain aiohttp"] / med["race floor"], 3),
        # Stage 3's target: the floor its library sets, a plain session's time.
        "over_aiohttp": round(med["race stage3_asyncio"] / med["race plain aiohttp"], 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the harness (or, with --serve, be its site) and print its two figures."""
    parser = argparse.ArgumentParser(
        prog="python -m shared.tools.bench.independent", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--max-tasks", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per page")
    parser.add_argument("--race", type=int, default=10000, help="fetches at once")
    parser.add_argument("--race-delay", type=float, default=2.0, help="seconds per race page")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to separate cores")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(serve(args.pages, args.latency, args.race, args.race_delay))
        return 0
    doc = measure(args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=1)
    pps, o = doc["pages_per_s"], doc["options"]
    print(
        f"{o['pages']:,} pages of {o['latency'] * 1000:g} ms, --max-tasks {o['max_tasks']}: "
        f"stage 3 {pps['stage3_asyncio']:,.0f} pages/s, threads {pps['threads']:,.0f}: "
        f"{doc['s1_ratio']:.2f}x the threads (target: at least 1)\n"
        f"{o['race']:,} fetches of {o['race_delay']:g} s at once: stage 3 "
        f"{statistics.median(doc['seconds']['race stage3_asyncio']):.2f} s, the floor "
        f"{statistics.median(doc['seconds']['race floor']):.2f} s: {doc['race_ratio']:.2f}x "
        "the floor\n"
        f"the same fetches with a plain aiohttp session, nothing else: "
        f"{statistics.median(doc['seconds']['race plain aiohttp']):.2f} s, "
        f"{doc['aiohttp_ratio']:.2f}x the floor; stage 3 {doc['over_aiohttp']:.2f}x it "
        f"(target: at most {AIOHTTP_RACE_TARGET})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
