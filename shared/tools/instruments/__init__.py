"""The instruments: observers that watch a crawl while it runs, and say what they saw.

Each implements :class:`shared.observe.Observer`, the protocol the hand-made loops call
before every step, and is switched on by a flag of the command line (shared/tools/cli.py)
or by a tool (the show page, the bench), for the length of a ``with watching(...)``
block.  A crawl nobody watches never imports them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from shared.observe import Observer
from shared.observe import watching as watching_the_loops
from shared.tools.instruments.story import telling_the_story


@contextlib.contextmanager
def watching(*observers: Observer) -> Iterator[None]:
    """Within the block, ``observers`` watch each crawl that begins: its loop and its story.

    The loops and stage 3's session read :data:`shared.observe.observer` themselves; the
    story (queued, started, finished) comes from BaseCrawler, wrapped meanwhile
    (shared/tools/instruments/story.py).
    """
    with watching_the_loops(*observers), telling_the_story():
        yield
