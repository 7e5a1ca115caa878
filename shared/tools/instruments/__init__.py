"""The instruments: observers that watch a crawl while it runs, and say what they saw.

Each implements :class:`shared.observe.Observer`, the protocol the hand-made loops call
before every step, and is switched on by a flag of the command line (shared/tools/cli.py)
or by a tool (the show page, the bench).  A crawl nobody watches never imports them.
"""
