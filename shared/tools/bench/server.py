"""The test site in a process of its own, for measurements: ``python -m shared.tools.bench.server``.

``python -m shared.testsite`` is for a class to watch: it logs every request, which
would cost the site more time than answering it.  This server runs the same
:class:`shared.testsite.Site` without an access log, with a listen backlog deep enough
for thousands of connections arriving at once, and with a file-descriptor limit as
high as the system allows.

It prints one JSON line, ``{"url": "http://127.0.0.1:PORT/"}``, then answers one-line
commands on its standard input, each with one JSON line:

* ``reset``  forget the observations and re-arm the flaky page (between two crawls);
* ``stats``  ``{"requests": N, "urls": N, "max_in_flight": N}`` since the last reset.

It stops when its standard input closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from shared.testsite import Site, add_site_arguments, site_from_arguments

#: Connections the kernel may hold for us before we accept them (capped by somaxconn).
BACKLOG = 16384


def raise_fd_limit() -> None:
    """Lift the soft limit on file descriptors to the hard one: one per connection."""
    try:
        import resource  # POSIX only; Windows has no such limit to lift
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def answer(site: Site, command: str) -> dict[str, Any]:
    """Carry out one command and return the reply."""
    if command == "reset":
        site.reset()
        return {"ok": True}
    if command == "stats":
        return {
            "requests": sum(site.requests.values()),
            "urls": len(site.requests),
            "max_in_flight": site.max_in_flight,
        }
    return {"error": f"unknown command {command!r}: use reset or stats"}


async def serve(site: Site, port: int) -> None:
    """Serve ``site`` on 127.0.0.1 until standard input closes."""
    runner = web.AppRunner(site.make_app(), access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, backlog=BACKLOG).start()
    print(json.dumps({"url": f"http://127.0.0.1:{runner.addresses[0][1]}/"}), flush=True)

    loop = asyncio.get_running_loop()
    closed = asyncio.Event()
    pending = bytearray()  # commands may arrive split or several at once
    stdin = sys.stdin.fileno()

    def on_input() -> None:
        data = os.read(stdin, 4096)
        if not data:
            loop.remove_reader(stdin)
            closed.set()
            return
        pending.extend(data)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            reply = answer(site, line.decode().strip())
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()

    # The site's counters live in this loop's thread, so commands run here too.
    loop.add_reader(stdin, on_input)
    try:
        await closed.wait()
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the site's definition from the command line and serve it."""
    parser = argparse.ArgumentParser(description="Serve the test site for measurements.")
    add_site_arguments(parser, port=0)
    args = parser.parse_args(argv)
    site = site_from_arguments(args)
    raise_fd_limit()
    asyncio.run(serve(site, args.port))


if __name__ == "__main__":
    main()
