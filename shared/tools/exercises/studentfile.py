"""The student's file, judged as code: only the emptied bodies may change, and only so far.

A student edits the file that holds the exercise's emptied functions, and nothing else.
Whatever else that file runs runs inside the check, beside the tests: a line at the top
of the module that patches pytest, or an `atexit` function that writes results, would
be graded as if it were the answer.  So `check` and `grade` compare the student's file
with the handout's by syntax tree, not by text:

- Outside the emptied bodies, the tree must be the handout's, docstrings aside (comments
  and layout are not in the tree at all).  A new import, a line of module-level code, a
  new definition, a decorator, a changed signature: each is named with its line.
- Inside the bodies, the student writes what they like from the names a solution is
  made of: their own locals, the module's own names, Python's ordinary builtins, and the
  names the reference solutions of the exercise use.  What reaches beyond the code under
  test is refused unless a reference solution uses it too: an import, `global` (a
  write to the module's names), a name of DENIED or attribute of DENIED_ATTRIBUTES (the
  interpreter, the file system, the test runner, code from text), and any dunder name or
  attribute but the HARMLESS few (`__globals__`, `__dict__`, `__subclasses__`, ...).

The tree is parsed from the file's bytes, as Python itself reads them, coding line and all.
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.tools.exercises import answers, workspace
from shared.tools.exercises.bodies import FunctionNode, put_bodies
from shared.tools.exercises.catalog import ROOT, Exercise
from shared.tools.exercises.messages import say

#: Modules that reach past the code under test: the interpreter, processes, files, the
#: test runner, code made from text.  Refused as names and as attributes.
MODULES = frozenset(
    {
        *("sys", "os", "gc", "atexit", "builtins", "importlib", "inspect", "ctypes"),
        *("subprocess", "signal", "threading", "multiprocessing", "io", "pathlib", "shutil"),
        *("tempfile", "linecache", "traceback", "runpy", "pickle", "marshal", "types"),
        *("codeop", "pytest", "_pytest", "pluggy", "faulthandler", "site"),
    }
)
#: Builtins that do the same: code from text, the namespaces, attributes by name, files.
DENIED = MODULES | {
    *("exec", "eval", "compile", "open", "globals", "locals", "vars", "getattr"),
    *("setattr", "delattr", "breakpoint", "input", "exit", "quit", "help", "memoryview"),
}
#: Attributes that do the same: the table of modules, frames and code objects.
DENIED_ATTRIBUTES = MODULES | {
    *("modules", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame"),
    *("cr_frame", "ag_frame", "tb_frame", "tb_next", "gi_code", "cr_code", "ag_code"),
}
ORDINARY = frozenset(name for name in dir(builtins) if not name.startswith("_")) - DENIED


@dataclass(frozen=True)
class Item:
    """One piece of a module's outline: where it starts, what it is, and its digest."""

    line: int
    label: str
    digest: str


def _dump(node: ast.AST) -> str:
    return hashlib.sha256(ast.dump(node, include_attributes=False).encode()).hexdigest()[:16]


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1:]
    return body


def _label(node: ast.stmt, prefix: str) -> str:
    if isinstance(node, ast.ClassDef):
        return f"class {prefix}{node.name}"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return f"def {prefix}{node.name}"
    if isinstance(node, ast.Import | ast.ImportFrom):
        return "an import"
    return "module-level code" if not prefix else f"code in class {prefix.rstrip('.')}"


def outline(tree: ast.Module, emptied: Iterable[str]) -> list[Item]:
    """The module as a list of items, each digested without line numbers or docstrings.

    A class is its header (decorators, bases, name) and then its members; each function
    of ``emptied`` (qualified names) is its signature and decorators, its body left out.
    """
    blanked = set(emptied)
    items: list[Item] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in _without_docstring(body):
            label = _label(node, prefix)
            if isinstance(node, ast.ClassDef):
                header = copy.copy(node)
                header.body = []
                items.append(Item(node.lineno, label, _dump(header)))
                walk(node.body, f"{prefix}{node.name}.")
                continue
            if isinstance(node, FunctionNode) and f"{prefix}{node.name}" in blanked:
                signature = copy.copy(node)
                signature.body = []
                items.append(Item(node.lineno, label, _dump(signature)))
                continue
            stripped = _strip_docstrings(node)
            items.append(Item(node.lineno, label, _dump(stripped)))

    walk(tree.body, "")
    return items


def _strip_docstrings(node: ast.stmt) -> ast.AST:
    """The statement as dumped: the docstrings of the functions and classes in it left out
    (of a copy: the tree stays as it was)."""
    plain = copy.deepcopy(node)
    for inner in ast.walk(plain):
        if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner.body = _without_docstring(inner.body) or [ast.Pass()]
    return plain


def compare_outlines(path: str, mine: list[Item], theirs: list[tuple[str, str]]) -> list[str]:
    """What the student's outline changed from the handout's (label and digest pairs)."""
    for index, item in enumerate(mine):
        if index >= len(theirs):
            what = f"{item.label} added"
            return [say("en", "code.outside", path=path, line=item.line, what=what)]
        label, digest = theirs[index]
        if item.digest != digest:
            how = "changed" if item.label == label else f"added before {label}"
            what = f"{item.label} {how}"
            return [say("en", "code.outside", path=path, line=item.line, what=what)]
    if len(theirs) > len(mine):
        return [say("en", "code.removed", path=path, what=theirs[len(mine)][0])]
    return []


def functions(tree: ast.Module, qualnames: Iterable[str]) -> Iterator[tuple[str, FunctionNode]]:
    """Each of ``qualnames`` the module defines (at the top, or in a top-level class)."""
    wanted = set(qualnames)

    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, FunctionNode]]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, FunctionNode) and f"{prefix}{node.name}" in wanted:
                yield f"{prefix}{node.name}", node

    yield from walk(tree.body, "")


def module_names(tree: ast.Module) -> set[str]:
    """The names the module binds at its top: imports, definitions, assignments."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return names


def _locals(function: FunctionNode) -> set[str]:
    """Every name the function or a function nested in it binds: arguments, stores, defs."""
    found: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
            found |= {node.name} if node.name else set()
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.add(node.rest)
    return found


#: Python's own names an answer may well use, and that lead nowhere: a name for a message,
#: the type of an object (as `type` gives it), a call to the parent's method.
HARMLESS = frozenset(
    {"__name__", "__qualname__", "__class__", "__init__", "__iter__", "__next__", "__repr__"}
)


def dunder(name: str) -> bool:
    """Whether a name is one of Python's own (`__globals__`), other than HARMLESS: a way
    into the interpreter."""
    return name.startswith("__") and name.endswith("__") and name not in HARMLESS


def special(name: str, attribute: bool = False) -> bool:
    """Whether a name (or an attribute) reaches past the code under test."""
    return dunder(name) or name in (DENIED_ATTRIBUTES if attribute else DENIED)


def granted(references: Iterable[FunctionNode]) -> set[str]:
    """What the reference solutions use that `special` refuses, and their imports and
    `global` statements (as "import:DIGEST" and "global:NAME"): allowed to the student too."""
    found: set[str] = set()
    for function in references:
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and special(node.id):
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and special(node.attr, attribute=True):
                found.add(node.attr)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                found.add(f"import:{_dump(node)}")
            elif isinstance(node, ast.Global):
                found |= {f"global:{name}" for name in node.names}
    return found


def body_problems(
    path: str, qualname: str, function: FunctionNode, module: set[str], allowed: set[str]
) -> list[str]:
    """What the body of ``function`` uses that no solution of the exercise needs, by line.

    A name read must be a local, one of the ``module``'s own, an ordinary builtin or one
    ``allowed`` (see `granted`); no name or attribute may be `special` unless allowed.
    """
    known = _locals(function) | {name for name in module if not special(name)} | ORDINARY
    found: list[tuple[int, str]] = []
    for statement in function.body:
        for node in ast.walk(statement):
            line = getattr(node, "lineno", function.lineno)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                # A local is the student's own, whatever its name; a special name is known
                # only as a local (or where a reference solution uses it).
                if node.id not in known and node.id not in allowed:
                    found.append((line, f"`{node.id}`"))
            elif isinstance(node, ast.Attribute) and special(node.attr, attribute=True):
                if node.attr not in allowed:
                    found.append((line, f"`.{node.attr}`"))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                if f"import:{_dump(node)}" not in allowed:
                    found.append((line, "an import"))
            elif isinstance(node, ast.Global) and any(
                f"global:{name}" not in allowed for name in node.names
            ):
                found.append((line, "`global`"))
    return [
        say("en", "code.body", path=path, line=line, what=what, function=qualname)
        for line, what in sorted(set(found))
    ]


def judge(
    path: str,
    source: bytes,
    emptied: list[str],
    expected: list[tuple[str, str]],
    allowed: set[str],
) -> list[str]:
    """Everything the student's file ``path`` does beyond writing the bodies of ``emptied``.

    ``expected`` is the handout's outline (label and digest of each item); ``allowed`` what
    the reference solutions use that `special` refuses (see `granted`).  A file that does
    not parse is no tampering: it is a wrong answer, and the tests say so.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = compare_outlines(path, outline(tree, emptied), expected)
    module = module_names(tree)
    for qualname, function in functions(tree, emptied):
        found += body_problems(path, qualname, function, module, allowed)
    return found


def expected_outline(source: bytes, emptied: list[str]) -> list[tuple[str, str]]:
    """The handout's outline of a file, as `judge` takes it (and a manifest keeps it)."""
    return [(item.label, item.digest) for item in outline(ast.parse(source), emptied)]


def facts(exercise: Exercise) -> dict[str, Any]:
    """What judging the exercise's files needs, from the repository: each file's emptied
    functions and handout outline, and what the reference solutions are `granted`.

    A handout keeps this in its manifest, where `check` finds it without the repository.
    """
    texts = workspace.emptied(exercise)
    by_file: dict[str, list[str]] = {}
    for target in exercise.replace:
        by_file.setdefault(target.path, []).append(target.qualname)
    # The reference, and each task's step towards it (`solve --task N`): a student who
    # stops after task N has written what that step holds, and may use what it uses.
    known = answers.load(exercise)
    stages = [known.bodies(task) for task in sorted(known.tasks)]
    references = []
    for path, names in by_file.items():
        source = (ROOT / path).read_text(encoding="utf-8")
        versions = [source]
        for bodies in stages:
            mine = {t.qualname: body for t, body in bodies.items() if t.path == path}
            versions += [put_bodies(source, mine)] if mine else []
        for text in versions:
            references += [node for _, node in functions(ast.parse(text), names)]
    files = {
        path: {"emptied": names, "outline": expected_outline(texts[path].encode(), names)}
        for path, names in by_file.items()
    }
    return {"files": files, "granted": sorted(granted(references))}


def judge_folder(folder: Path, known: Mapping[str, Any]) -> list[str]:
    """What the student's files in ``folder`` do beyond the emptied bodies, by file and line.

    ``known`` is what `facts` gives; a missing student file is no tampering (the tests fail).
    """
    found: list[str] = []
    allowed = set(known["granted"])
    for path, entry in sorted(known["files"].items()):
        file = folder / path
        if file.is_file():
            theirs = [(label, digest) for label, digest in entry["outline"]]
            found += judge(path, file.read_bytes(), list(entry["emptied"]), theirs, allowed)
    return found


def readable(data: object) -> bool:
    """Whether ``data`` (read from a manifest) has the shape `facts` gives."""
    if not isinstance(data, dict) or not isinstance(data.get("granted"), list):
        return False
    files = data.get("files")
    return isinstance(files, dict) and all(
        isinstance(entry, dict)
        and isinstance(entry.get("emptied"), list)
        and isinstance(entry.get("outline"), list)
        and all(isinstance(pair, list) and len(pair) == 2 for pair in entry["outline"])
        for entry in files.values()
    )
