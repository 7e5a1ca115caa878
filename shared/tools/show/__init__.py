"""See it: every step of a real crawl, recorded, and a page to step through it.

``nox -s show -- stage2`` crawls a tiny built-in site with a recorder watching, as
``--trace``'s Tracer does (:mod:`shared.tools.show.record`), and writes one self-contained HTML page
(:mod:`shared.tools.show.page`): one lane per actor on a time axis, each step of the loop and
each wait drawn, and at the chosen step what ran and why, the stage's code at the line
that ran, and the loop's state.  :mod:`shared.tools.show.browser` drives a headless Chromium,
for the screenshot and for the tests.
"""
