"""The README must say true things: code its map names exists, its count of the site is right."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from shared.testsite import Site

ROOT = Path(__file__).resolve().parent.parent
# A reference looks like `stage1_callbacks/loop.py:EventLoop.run_once` (the name is optional).
REFERENCE = re.compile(r"`([\w/]+\.py)(?::([\w.]+))?`")


def ideas_table() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## The chapter's ideas, stage by stage")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def defines(path: Path, qualname: str) -> bool:
    """Tell whether a module defines a class, function or method of that dotted name."""
    scope: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in qualname.split("."):
        found = [
            node
            for node in scope
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == part
        ]
        if not found:
            return False
        scope = found[0].body
    return True


def test_every_file_and_function_in_the_ideas_table_exists() -> None:
    references = REFERENCE.findall(ideas_table())
    assert len(references) >= 25, "the table should map every idea in every stage"
    missing = [
        f"{file}:{name}"
        for file, name in references
        if not (ROOT / file).is_file() or (name and not defines(ROOT / file, name))
    ]
    assert not missing, f"the README names code that does not exist: {missing}"


def test_defines_can_tell_a_missing_name() -> None:
    path = ROOT / "stage2_generators" / "tasks.py"
    assert defines(path, "Task._step")
    assert not defines(path, "Task.no_such_method")


def test_the_default_site_has_as_many_urls_as_the_readme_says() -> None:
    """The README's count of the default site's URLs is the oracle's, not a memory of it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## The test site and the tests") :]
    found = re.search(r"`Site\(\)`[^.]*? has (\d+) URLs", section)
    assert found, "the sentence giving the default site's size has changed: update this test"
    site, base_url = Site(), "http://127.0.0.1:8080/"
    records = site.expected(base_url)
    linked = site.expected(base_url, ignore_robots=True)  # the same, but for /robots.txt
    assert set(records) - set(linked) == {base_url + "robots.txt"}
    assert int(found.group(1)) == len(linked)
