"""The direction of imports: the stages and what they share never lean on the tools.

`shared/` has two rooms: what the stages import (and the test site), and `shared/tools/`,
the instruments that run, record, compare, check or draw the stages.  A student reading a
stage should meet only the lesson, so the arrows point one way:

* nothing outside `shared/tools/` imports `shared.tools`;
* nothing in `shared/` but the tools imports a stage;
* no stage imports another stage.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shared import STAGES

ROOT = Path(__file__).resolve().parent.parent
STAGE_PACKAGES = tuple(STAGES.values())
TOOLS = ROOT / "shared" / "tools"


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports, by its absolute dotted name (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def python_files(folder: Path) -> list[Path]:
    """The .py files under a folder, in a stable order."""
    return sorted(folder.rglob("*.py"))


def is_within(name: str, package: str) -> bool:
    """Whether a dotted module name is the package or inside it."""
    return name == package or name.startswith(package + ".")


def lesson_files() -> list[Path]:
    """The stages' files and shared's files outside the tools: what a student reads."""
    shared = [p for p in python_files(ROOT / "shared") if TOOLS not in p.parents]
    stages = [p for package in STAGE_PACKAGES for p in python_files(ROOT / package)]
    return shared + stages


def violations(path: Path, root: Path = ROOT) -> list[str]:
    """The imports of one file that point the wrong way, as sentences."""
    where = path.relative_to(root)
    here, in_tools = where.parts[0], where.parts[:2] == ("shared", "tools")
    found = []
    for name in sorted(imported_modules(path, root)):
        if is_within(name, "shared.tools") and not in_tools:
            found.append(f"{where} imports the tool {name}")
        for stage in STAGE_PACKAGES:
            if not is_within(name, stage) or stage == here:
                continue
            if here == "shared" and not in_tools:
                found.append(f"{where} (shared) imports the stage {name}")
            elif here in STAGE_PACKAGES:
                found.append(f"{where} (a stage) imports another stage, {name}")
    return found


def test_the_lesson_never_imports_the_tools_and_stages_stand_alone() -> None:
    """Every file of the lesson imports in the allowed direction."""
    files = lesson_files()
    assert len(files) > 20, "the layout test found too few files to judge: has the tree moved?"
    wrong = [sentence for path in files for sentence in violations(path)]
    assert not wrong, "imports against the layout's direction:\n" + "\n".join(wrong)


def test_the_tools_do_import_the_stages() -> None:
    """The check is not vacuous: the tools' own imports are seen, and they do name stages."""
    seen = {name for path in python_files(TOOLS) for name in imported_modules(path)}
    assert any(is_within(name, stage) for name in seen for stage in STAGE_PACKAGES)


@pytest.mark.parametrize(
    ("source", "where", "expected"),
    [
        ("from shared.tools.show import record\n", "stage2_generators/x.py", "imports the tool"),
        ("import stage1_callbacks.loop\n", "shared/x.py", "imports the stage"),
        ("from stage2_generators import loop\n", "stage3_asyncio/x.py", "another stage"),
        ("from .tools import bench\n", "shared/x.py", "imports the tool"),
    ],
)
def test_a_wrong_import_is_named(source: str, where: str, expected: str, tmp_path: Path) -> None:
    """Each kind of wrong arrow, written into a file of its kind, is reported."""
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    assert any(expected in sentence for sentence in violations(path, tmp_path))
