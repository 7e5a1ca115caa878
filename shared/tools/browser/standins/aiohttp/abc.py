"""A stand-in for aiohttp.abc in the browser build (see __init__.py)."""

from aiohttp import stand_in


def __getattr__(name: str) -> type:
    """Any name: a stand-in class (dunder names are not ours to invent)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return stand_in(name)
