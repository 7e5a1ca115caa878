"""Code shared by the three crawlers: everything that does not depend on the concurrency style."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

__version__ = "0.1.0"

#: Sent with every request by every stage, so a site's logs name the crawler.
USER_AGENT = f"crawler500/{__version__}"

#: The three stages, in the order they are taught: short name -> package.  The one list of
#: them: the tests and the tools read it from here (the noxfile, from the stages' folders).
STAGES = {"stage1": "stage1_callbacks", "stage2": "stage2_generators", "stage3": "stage3_asyncio"}

#: The exit status of a command line whose reader left (``| head``): the shell's 128 + SIGPIPE.
EXIT_PIPE = 141


def lazy_exports(module: str, names: list[str]) -> Callable[[str], object]:
    """Return a module ``__getattr__`` (PEP 562) that imports ``module`` when ``names`` are used.

    A stage's package exports ``Crawler`` and ``crawl`` this way rather than importing
    its crawler at once: ``python -m STAGE`` imports the package before its
    ``__main__``, and ``__main__`` must take Ctrl-C over before the slow imports begin.
    """

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {module.rpartition('.')[0]!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__


def reader_left() -> int:
    """Say no more, as cat or grep would once their reader left (``| head``, a pager quit
    early); return EXIT_PIPE.  Every command line of the project ends so.

    Points stdout and stderr at /dev/null, or Python's last flush complains.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.dup2(devnull, sys.stderr.fileno())
    return EXIT_PIPE
