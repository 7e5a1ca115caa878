"""``python -m stage1_callbacks [ROOT ...]``: crawl with callbacks on a hand-made event loop."""

import sys

from shared.cli import main
from stage1_callbacks.crawler import crawl

if __name__ == "__main__":
    sys.exit(main("stage1_callbacks", crawl))
