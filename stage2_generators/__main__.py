"""``python -m stage2_generators [ROOT ...]``: crawl with hand-made generator coroutines."""

import sys

from shared.cli import main
from stage2_generators.crawler import crawl

if __name__ == "__main__":
    sys.exit(main("stage2_generators", crawl))
