"""Whether a class is ready: `nox -s setup` runs this last, in the class's environment.

It imports what the class's commands need (the crawlers' packages, what a check needs,
the exercise tool), then says which Python the class runs on and what the environment
weighs on disk; or it names what is missing, with exit status 1.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from pathlib import Path

#: The crawlers' packages, the checks' packages, and the tool the exercises run on.
NEEDED = ("aiohttp", "lxml", "pytest", "pytest_asyncio", "trustme", "shared.tools.exercises.cli")


def main() -> int:
    """Check the environment this runs in; print the verdict; 0 when ready."""
    print(f"the class's sessions run on Python {platform.python_version()} ({sys.executable})")
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as error:  # any failure to import is what a class would meet
            missing.append(f"{name} ({type(error).__name__}: {error})")
    if missing:
        print(f"not ready: {'; '.join(missing)}; run nox -s setup again", file=sys.stderr)
        return 1
    env = Path(os.path.relpath(sys.prefix)).as_posix()
    disk = sum(path.stat().st_size for path in Path(sys.prefix).rglob("*") if path.is_file())
    print(
        f"ready for class: {env} ({disk / 1e6:.0f} MB on disk) has everything; the class's "
        "sessions need no network from now on"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
