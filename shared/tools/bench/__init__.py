"""Measuring the three stages side by side, next to the chapter's "traditional approach".

* ``threaded.py``  the baseline: a pool of threads on blocking sockets, one lock.
* ``compare.py``   ``nox -s compare``: one site, four crawlers, one table and one picture.
* ``bench.py``     ``nox -s bench``: repeated scenarios, results.json and its markdown table.
* ``browsertab.py`` S4: the browser tab's size, first load and check, in headless Chromium.
* ``server.py``    the test site in a process of its own, pinned to a core.
* ``load.py``      a bare load client: how many requests a second the site can serve.
* ``pagecost.py``  the CPU one page costs in the code every stage shares, without a network.
* ``measure.py``   running a crawler as a child process, and what its timeline says.
* ``rusage.py``    the small launcher that measures a crawler's peak memory.
* ``svg.py``       the picture, written by hand.

RESULTS.md reads the figures of one run of the benchmark (results.json).
"""
