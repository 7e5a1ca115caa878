"""What ``python -m STAGE`` runs: Ctrl-C taken over, then the command line and the stage.

This module stays light on purpose: a stage's ``__main__`` imports it before anything
slow, so that a Ctrl-C pressed while Python starts is already news for the crawl.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

from shared import interrupt


def run_stage(package: str) -> NoReturn:
    """Run a stage's command line (``python -m STAGE``) and exit with its status.

    Ctrl-C is taken over first of all, before the slow imports: from then on it is news
    for the crawl (see shared/interrupt.py), not a KeyboardInterrupt raised wherever
    Python happens to be.
    """
    with interrupt.taken_over():
        from shared.tools.cli import main  # the slow imports begin here

        crawler = importlib.import_module(f"{package}.crawler")
        sys.exit(main(package, crawler.crawl))
