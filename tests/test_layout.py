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
    return {name for node in ast.walk(tree) for name in import_names(node, package)}


def import_names(node: ast.AST, package: str) -> set[str]:
    """The absolute dotted names one import statement names (none for any other node)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


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


# --- inside a stage: imports at the top, and no circle ----------------------------------------


def is_type_checking(node: ast.AST) -> bool:
    """Whether a node is `if TYPE_CHECKING:`, whose imports never run."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def load_imports(path: Path, root: Path = ROOT) -> tuple[set[str], list[str]]:
    """What a file imports as it loads, and its imports hidden inside functions, as sentences.

    An import under `if TYPE_CHECKING:` is for the type checker alone: it never runs.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(root)
    package = ".".join(where.with_suffix("").parts[:-1])
    loaded: set[str] = set()
    hidden: list[str] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            hidden += [
                f"{where}:{inner.lineno} imports inside a function"
                for inner in ast.walk(node)
                if isinstance(inner, ast.Import | ast.ImportFrom)
            ]
            continue
        loaded |= import_names(node, package)
        pending += [child for child in ast.iter_child_nodes(node) if not is_type_checking(child)]
    return loaded, hidden


def package_problems(package: Path, root: Path = ROOT) -> list[str]:
    """A hand-made stage's imports inside functions, and any circle among its modules."""
    modules = {
        ".".join(p.relative_to(root).with_suffix("").parts): p for p in python_files(package)
    }
    edges: dict[str, set[str]] = {}
    problems: list[str] = []
    for name, path in modules.items():
        loaded, hidden = load_imports(path, root)
        problems += hidden
        edges[name] = {m for m in loaded if m in modules and m != name}
    # Depth first: a module met again while it is still on the path closes a circle.
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            problems.append("import circle: " + " -> ".join([*path[path.index(name) :], name]))
            return
        if name not in done:
            for other in sorted(edges[name]):
                visit(other, [*path, name])
            done.add(name)

    for name in sorted(modules):
        visit(name, [])
    return problems


@pytest.mark.parametrize("package", ["stage1_callbacks", "stage2_generators"])
def test_a_hand_made_stage_imports_at_the_top_and_in_one_direction(package: str) -> None:
    """Every import of the stage runs as its module loads, and no two modules need each other.

    The running loop is kept where asyncio keeps it, in a module of its own (events.py), so
    that futures, tasks and the loop can each reach it without importing the loop's module.
    """
    problems = package_problems(ROOT / package)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"a.py": "from . import b\n", "b.py": "from .a import x\n"}, "circle: pkg.a -> pkg.b"),
        ({"a.py": "def f():\n    from . import b\n", "b.py": ""}, "a.py:2 imports inside"),
        ({"a.py": "if TYPE_CHECKING:\n    from . import b\n", "b.py": "import pkg.a\n"}, None),
    ],
)
def test_a_circle_or_a_hidden_import_is_named(
    files: dict[str, str], expected: str | None, tmp_path: Path
) -> None:
    """A circle, or an import inside a function, planted in a package is reported; an import
    for the type checker alone is not."""
    (tmp_path / "pkg").mkdir()
    for name, text in files.items():
        (tmp_path / "pkg" / name).write_text(text, encoding="utf-8")
    problems = package_problems(tmp_path / "pkg", tmp_path)
    if expected is None:
        assert problems == []
    else:
        assert any(expected in problem for problem in problems), problems
