"""The pytest process of one check: its results go back to `check` alone, each one signed.

`check` (checking.py) copies this file beside the scratch tree and runs it as a script,
`python -I runner.py`, so that neither the current folder nor the user's site is on the
path.  On its standard input, and nowhere else, `check` writes one JSON line: the
folders the path is made of, pytest's arguments and a fresh secret.  This script reads
the line before any code under test is imported and closes standard input.  It then
keeps its standard output for the records alone, on a new descriptor, and points
descriptor 1 at standard error, where pytest's own output goes with everything code
under test prints.  The descriptor and the secret live in a closure that pytest's
plugins reach only through `record`.  Each record travels as its JSON and an HMAC of
it with the secret: a line that nobody signed, or that repeats a verdict, is seen for
what it is by `check`.  (A pipe `check` reads; on every system, no file, no name.)

It imports nothing of the tool: the scratch tree has the student's copy of `shared/`,
and the tool may not be on the path at all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from collections.abc import Callable
from typing import Any


class Results:
    """The plugin through which tests/exercises/conftest.py sends its records to `check`.

    The conftest finds it among pytest's plugins by its ``name``.
    """

    name = "exercise-results"

    def __init__(self, record: Callable[[dict[str, Any]], None]) -> None:
        self.record = record


def signed(secret: bytes, entry: dict[str, Any]) -> str:
    """One record as the line `check` reads: its JSON and the HMAC of it with the secret."""
    text = json.dumps(entry, sort_keys=True)
    mac = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"record": text, "mac": mac}) + "\n"


def signer(secret: bytes) -> Callable[[dict[str, Any]], None]:
    """A function that writes a record, signed, to what was standard output."""
    sys.stdout.flush()
    fd = os.dup(1)  # not inheritable: a server or crawler a test starts does not get it
    os.dup2(2, 1)  # what anything else writes to standard output goes to standard error
    pipe = os.fdopen(fd, "w", encoding="utf-8")

    def record(entry: dict[str, Any]) -> None:
        pipe.write(signed(secret, entry))
        pipe.flush()

    return record


def bound(limits: dict[str, int]) -> None:
    """Cap what this process and its children may take (`grade`'s order: memory, the size of
    a file written), where the system has such limits: a student's code that allocates
    without end fails its test, and not the teacher's machine."""
    try:
        import resource
    except ImportError:  # Windows: the whole check's time limit is all there is
        return
    for name, value in limits.items():
        which = getattr(resource, name)
        hard = resource.getrlimit(which)[1]
        resource.setrlimit(which, (value if hard < 0 else min(value, hard), hard))


def main() -> int:
    """Read the order on standard input, then run pytest with the results plugin."""
    order = json.loads(sys.stdin.readline())
    sys.stdin.close()
    bound(order.get("limits", {}))
    record = signer(bytes.fromhex(order.pop("secret")))
    sys.path[:0] = order["path"]  # -I put neither this folder nor the current one there
    import pytest  # from the path just made, after the secret is out of reach

    return int(pytest.main(order["argv"], plugins=[Results(record)]))


if __name__ == "__main__":
    sys.exit(main())
