"""A local web site that knows what a correct crawl of it must find.

The three crawlers are tested against this site.  It is generated deterministically from
``(pages, seed, fanout)`` and served by aiohttp.web on 127.0.0.1.  Because the site is
built from a definition held in memory, :meth:`Site.expected` can compute, from that
definition alone, the record a correct crawler makes for every URL it reaches: the
oracle never looks at a crawler's output.

Where things are
----------------
===================  ===========================================================================
``pages.py``         what one URL is (``Resource``) and the helpers pages are written with
``traps.py``         the traps, hostile pages and robots.txt files: **add a trap here**
``endless.py``       servers that never finish (floods, trickles), bounded by the site itself
``hostile_wire.py``  responses odd byte by byte, each beside its record (``wire=True``)
``names.py``         host names whose DNS fails or never answers (``fake_names()``), counted
``site.py``          ``Site``: the generated pages, the observations the server makes, reset()
``oracle.py``        ``Expected`` and the walk behind ``Site.expected()``: the right answer
``server.py``        ``serve()``: answering each page (and each misbehaviour), counting requests
``tls.py``           ``local_tls()`` and ``ServerTLS``: https with a throw-away CA
``cli.py``           ``python -m shared.testsite --pages N --latency S --port P``, for a class
``raw.py``           servers on raw sockets, for tests that choose every byte sent
===================  ===========================================================================

Everything a test needs is importable from here: ``from shared.testsite import Site,
serve``.  ``serve_hosts(site, loopback_hosts(3))`` serves one site on 127.0.0.1,
127.0.0.2 and 127.0.0.3 at once, three hosts for the crawlers' per-host limits, and
the server counts the requests in flight to each (``site.max_in_flight_by_host``).
"""

from shared.testsite.cli import add_site_arguments, main, site_from_arguments
from shared.testsite.endless import ENDLESS
from shared.testsite.oracle import Expected
from shared.testsite.pages import NEVER
from shared.testsite.server import loopback_hosts, serve, serve_hosts
from shared.testsite.site import Site
from shared.testsite.tls import ServerTLS, local_tls
from shared.testsite.traps import (
    CHAIN_LENGTH,
    DISALLOWED,
    HOSTILE,
    HUGE_SIZE,
    ROBOTS_KINDS,
    ROBOTS_TXT,
    TRAPS,
)

__all__ = [
    "CHAIN_LENGTH",
    "DISALLOWED",
    "ENDLESS",
    "HOSTILE",
    "HUGE_SIZE",
    "NEVER",
    "ROBOTS_KINDS",
    "ROBOTS_TXT",
    "TRAPS",
    "Expected",
    "ServerTLS",
    "Site",
    "add_site_arguments",
    "local_tls",
    "loopback_hosts",
    "main",
    "serve",
    "serve_hosts",
    "site_from_arguments",
]
