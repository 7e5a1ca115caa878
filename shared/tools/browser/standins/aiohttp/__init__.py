"""A stand-in for aiohttp in the browser build, where it cannot run (it needs sockets).

The exercises' shared conftest imports the test site (shared/testsite/), which imports
aiohttp's web server; the tests that run in a tab serve no site.  Any name asked of this
package or its modules is a class that fails when made, with the reason, so that the
repository's code imports as it is.
"""

from typing import Any

NO_SOCKETS = "aiohttp needs sockets, which a browser tab lacks: run this on the command line"


def stand_in(name: str) -> type:
    """A class named ``name`` that fails when made."""

    def refuse(self: Any, *args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{name}: {NO_SOCKETS}")

    return type(name, (), {"__init__": refuse, "__doc__": f"A stand-in for aiohttp's {name}."})


def __getattr__(name: str) -> type:
    """Any name: a stand-in class (dunder names are not ours to invent)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return stand_in(name)
