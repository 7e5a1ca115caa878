"""What a stuck student is told: the hint for the task that fails, and an emptied function
that fails with its own NotImplementedError whatever is left around it.

All in-process: `hint` reads the verdicts `check` keeps in the workspace's marker, so a
test gives the marker those verdicts instead of running a check.
"""

from __future__ import annotations

import pytest

from shared.tools.exercises.bodies import empty_functions

GENERATOR = '''
def fetch(url):
    """Yields."""
    reply = yield ("get", url)
    replies.append(reply)
'''


def test_what_is_left_of_an_emptied_generator_changes_nothing_under_the_student_s_code() -> None:
    emptied = empty_functions(GENERATOR, ["fetch"], {"fetch": "write fetch"})
    space: dict[str, object] = {}
    exec(compile(emptied, "<emptied>", "exec"), space)
    with pytest.raises(NotImplementedError, match="write fetch"):
        next(space["fetch"]("/"))  # type: ignore[operator]
    # The student writes the body in place of the `raise` line alone, and leaves the rest.
    stub = next(line for line in emptied.splitlines() if "raise NotImplementedError" in line)
    # Their body ends without a `return`, as a worker's loop or a callback's may.
    written = '    reply = yield ("get", url)\n    replies.append(reply)'
    space["replies"] = replies = []
    exec(compile(emptied.replace(stub, written), "<written>", "exec"), space)
    steps = space["fetch"]("/")  # type: ignore[operator]
    assert next(steps) == ("get", "/")
    with pytest.raises(StopIteration):
        extra = steps.send("ok")
        pytest.fail(f"the line left of the emptied body yielded {extra!r} after the student's")
    assert replies == ["ok"]
