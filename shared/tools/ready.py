"""Whether a class is ready: `nox -s setup` runs this last, in the class's environment.

It imports what the class's commands need (the crawlers' packages, what a check needs,
the exercise tool), then says which Python the class runs on and what the environment
weighs on disk; or it names what is missing, with exit status 1.  It speaks Chinese
where the locale does (shared/language.py), as the class's other commands do.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from pathlib import Path

from shared.tools.language import locale_language

#: The crawlers' packages, the checks' packages, and the tool the exercises run on.
NEEDED = ("aiohttp", "lxml", "pytest", "pytest_asyncio", "trustme", "shared.tools.exercises.cli")

SAYS = {
    "en": {
        "python": "the class's sessions run on Python {version} ({program})",
        "missing": "not ready: {missing}; run nox -s setup again",
        "ready": "ready for class: {env} ({mb:.0f} MB on disk) has everything; "
        "the class's sessions need no network from now on",
    },
    "zh-CN": {
        "python": "课堂的各个会话运行在 Python {version} 上（{program}）",
        "missing": "尚未就绪：缺少 {missing}；请再运行一次 nox -s setup",
        "ready": "课堂已准备就绪：{env}（占用磁盘 {mb:.0f} MB）里什么都有了；"
        "从现在起，课堂的各个会话都不再需要网络",
    },
}


def main() -> int:
    """Check the environment this runs in; print the verdict; 0 when ready."""
    says = SAYS[locale_language() or "en"]
    print(says["python"].format(version=platform.python_version(), program=sys.executable))
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as error:  # any failure to import is what a class would meet
            missing.append(f"{name} ({type(error).__name__}: {error})")
    if missing:
        print(says["missing"].format(missing="; ".join(missing)), file=sys.stderr)
        return 1
    env = Path(os.path.relpath(sys.prefix)).as_posix()
    disk = sum(path.stat().st_size for path in Path(sys.prefix).rglob("*") if path.is_file())
    print(says["ready"].format(env=env, mb=disk / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
