"""The direction of imports: the crawler's modules never lean on what watches them.

The project has four rooms, and a student reading a stage should meet only the first two:

* the crawler's modules, `shared/*.py`: what a stage imports to crawl, including the
  small observer protocol the hand-made loops call (`shared/observe.py`);
* the stages, each a package of its own;
* the test site, `shared/testsite/`, which knows the right answer;
* the tools, `shared/tools/`: the command line, the instruments (`instruments/`), the
  show page, the bench, the exercises.

The arrows point one way.  The crawler's modules import no stage, no test site and no
tool; a stage imports no other stage, no test site and no tool, but for its `__main__.py`,
the door to the command line (`shared.tools.run_stage`); the test site imports no stage and
no tool.  Every import counts: at the top, inside a function, or by `importlib` with a name
written in the code (a name made at run time, an f-string, is refused where it is found).
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
    """Every module a file imports, by its absolute dotted name (relative imports resolved).

    Imports inside functions count, and so do ``importlib.import_module("...")`` and
    ``__import__("...")``; a module name computed at run time is returned as ``"?" + code``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    return {name for node in ast.walk(tree) for name in import_names(node, package)}


def import_names(node: ast.AST, package: str) -> set[str]:
    """The absolute dotted names one import statement or importlib call names (else none)."""
    if isinstance(node, ast.Call) and node.args:
        function = ast.unparse(node.func)
        if function in {"importlib.import_module", "import_module", "__import__"}:
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                return {name.value}
            # A parameter's name passes: the caller wrote the module's name, and is judged.
            return set() if isinstance(name, ast.Name) else {"?" + ast.unparse(name)}
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
    """Every file outside the tools: the crawler's modules, the test site and the stages."""
    shared = [p for p in python_files(ROOT / "shared") if TOOLS not in p.parents]
    stages = [p for package in STAGE_PACKAGES for p in python_files(ROOT / package)]
    return shared + stages


def room(where: Path) -> str:
    """Which room a file (its path from the root) is in."""
    if where.parts[0] in STAGE_PACKAGES:
        return "a stage"
    if where.parts[:2] == ("shared", "tools"):
        return "the tools"
    if where.parts[:2] == ("shared", "testsite"):
        return "the test site"
    return "the crawler's modules"


def what_it_is(name: str) -> str | None:
    """What a module outside the crawler's modules is, or None (the stdlib, a library, shared)."""
    if name.startswith("?"):
        return f"a module named at run time, {name[1:]}"
    for stage in STAGE_PACKAGES:
        if is_within(name, stage):
            return f"the stage {name}"
    if is_within(name, "shared.tools.instruments"):
        return f"the instrument {name}"
    if is_within(name, "shared.tools"):
        return f"the tool {name}"
    if is_within(name, "shared.testsite"):
        return f"the test site {name}"
    return None


def violations(path: Path, root: Path = ROOT) -> list[str]:
    """The imports of one file that point the wrong way, as sentences."""
    where = path.relative_to(root)
    here = room(where)
    if here == "the tools":
        return []
    found = []
    for name in sorted(imported_modules(path, root)):
        kind = what_it_is(name)
        if kind is None or (here == "a stage" and is_within(name, where.parts[0])):
            continue
        door = where.name == "__main__.py" and is_within(name, "shared.tools.run_stage")
        if here == "a stage" and door:
            continue  # the door to the command line
        if here == "the test site" and kind.startswith("the test site"):
            continue
        found.append(f"{where} ({here}) imports {kind}")
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
        ("from stage2_generators import loop\n", "stage3_asyncio/x.py", "the stage stage2"),
        ("from .tools import bench\n", "shared/x.py", "imports the tool"),
        ("def f():\n    from shared.tools.instruments import trace\n", "shared/x.py", "instrument"),
        ("import importlib\nimportlib.import_module('stage1_callbacks')\n", "shared/x.py", "stage"),
        ("import importlib\nimportlib.import_module(f'{p}.crawler')\n", "shared/x.py", "run time"),
        ("from shared.testsite import Site\n", "shared/x.py", "imports the test site"),
        ("from shared.testsite import Site\n", "stage1_callbacks/x.py", "the test site"),
        ("import stage3_asyncio\n", "shared/testsite/x.py", "imports the stage"),
        ("from shared.tools.cli import main\n", "stage1_callbacks/__main__.py", "the tool"),
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


# --- hooks only where a loop has them --------------------------------------------------------

#: The lesson files that may name the observer: its protocol, and the one point each stage
#: has to watch, as trio calls its instruments from its run loop alone: stage 1's loop before
#: each callback, stage 2's Task before each step (its loop holds the observer), stage 3's
#: aiohttp session, whose tracing an observer configures.
OBSERVER_POINTS = {
    "shared/observe.py",
    "stage1_callbacks/loop.py",
    "stage2_generators/loop.py",
    "stage2_generators/tasks.py",
    "shared/aiohttp_wire.py",
}


def names_the_observer(path: Path, root: Path = ROOT) -> list[str]:
    """The lines of a lesson file outside the observer points that name the observer."""
    if path.relative_to(root).as_posix() in OBSERVER_POINTS:
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    where = path.relative_to(root)
    return [f"{where}:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if "observ" in line]


@pytest.mark.parametrize(
    "crawler", [f"{package}/crawler.py" for package in STAGE_PACKAGES] + ["shared/crawling.py"]
)
def test_no_crawler_tells_an_observer(crawler: str) -> None:
    """No crawler.py, nor BaseCrawler, has a line for its instruments.

    They watch the loops, and read the story from BaseCrawler, which they wrap while they
    watch (shared/tools/instruments/story.py).
    """
    found = names_the_observer(ROOT / crawler)
    assert not found, "a crawler tells its instruments itself:\n" + "\n".join(found)


def test_a_planted_observer_call_is_named(tmp_path: Path) -> None:
    """The check is not vacuous: a crawler that tells an observer is caught."""
    for crawler in ("stage1_callbacks/crawler.py", "shared/crawling.py"):
        path = tmp_path / crawler
        path.parent.mkdir(exist_ok=True)
        path.write_text("if self.observer:\n    self.observer.queued(url)\n", encoding="utf-8")
        assert len(names_the_observer(path, tmp_path)) == 2, crawler
