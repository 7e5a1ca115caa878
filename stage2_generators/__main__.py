"""``python -m stage2_generators [ROOT ...]``: crawl with hand-made generator coroutines."""

import sys

from shared import interrupt

if __name__ == "__main__":
    # First of all, before the slow imports: from here on a Ctrl-C is news for the crawl
    # (see shared/interrupt.py), not a KeyboardInterrupt raised wherever Python happens to be.
    with interrupt.taken_over():
        from shared.cli import main
        from stage2_generators.crawler import crawl

        sys.exit(main("stage2_generators", crawl))
