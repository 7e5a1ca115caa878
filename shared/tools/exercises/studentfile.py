"""The student's file, judged as code: only the emptied bodies may change, and only so far.

A student edits the file that holds the exercise's emptied functions, and nothing else.
Whatever else that file runs runs inside the check, beside the tests: a line at the top
of the module that patches pytest, or an `atexit` function that writes results, would
be graded as if it were the answer.  So `check` and `grade` read the student's file as a
teacher reads it (UTF-8, no other coding declaration) and compare it with the handout's
by syntax tree, not by text:

- Outside the emptied bodies, the tree must be the handout's, docstrings and the names
  of an emptied function's parameters aside (comments and layout are not in the tree at
  all).  A new import, a line of module-level code, a new definition, a decorator, a
  changed signature: each is named with its line.
- Inside the bodies, every name is judged by an allow-list, derived from the grammar:
  every field of every node type of the running Python's `ast` that holds a name
  (`NAME_FIELDS`; `name_fields` reads them from the grammar itself, and a name in a
  field this module does not know is refused) must be one of

  - a name the exercise's reference solutions or task steps use (`granted`);
  - a fresh name of the body's own (a local, a parameter, a nested function), which is
    not a refused builtin, not a module and not a dunder: so no local can stand for
    what is refused (`def f(open=open)`);
  - for a name read: one of the module's own (its functions, classes and constants), a
    module it imports that is not one of MODULES, or a builtin of SAFE_BUILTINS;
  - for an attribute: one the handout's file uses outside the bodies, a method of
    Python's plain value types (METHODS), a public name of a module of PURE_MODULES
    the body imports, or a public name of LESSON_MODULES or of their classes
    (`lesson_attributes`: not one that blocks or reaches past the crawl); never one of
    DENIED_ATTRIBUTES.

  A string becomes a name in one place a body can reach: the builtins of NAME_BUILTINS
  (`getattr(self, "_state")`), which are accepted only with a constant string that is
  itself an allowed attribute.  `type` makes a class only from a mapping of names, so
  it is accepted with one argument alone; `str.format` reads attributes from its
  template, so it is not among METHODS.  An import is accepted when a reference solution
  has the same one, or it takes public names from a module of PURE_MODULES
  (`from collections import deque`).

What each rule guarantees, and why the honest edits it meets are decided as they are, is
in GRADING.md.  The digests of the outline are made from `canonical`, which reads the
same on every Python from 3.11 on, so a handout made on one version is judged alike on
another.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.tools.exercises import answers, workspace
from shared.tools.exercises.bodies import FunctionNode, put_bodies
from shared.tools.exercises.catalog import ROOT, Exercise
from shared.tools.exercises.messages import say

#: Modules that reach past the code under test: the interpreter, processes, files, the
#: test runner, code made from text.  Never an attribute, nor a fresh name of the body's.
MODULES = frozenset(
    {
        *("sys", "os", "gc", "atexit", "builtins", "importlib", "inspect", "ctypes"),
        *("subprocess", "signal", "threading", "multiprocessing", "io", "pathlib", "shutil"),
        *("tempfile", "linecache", "traceback", "runpy", "pickle", "marshal", "types"),
        *("codeop", "pytest", "_pytest", "pluggy", "faulthandler", "site"),
    }
)
#: Attributes that reach the table of modules, frames and code objects: refused even where
#: the handout's file uses them outside the bodies.
DENIED_ATTRIBUTES = MODULES | {
    *("modules", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "gi_frame"),
    *("cr_frame", "ag_frame", "tb_frame", "tb_next", "gi_code", "cr_code", "ag_code"),
    *("format", "format_map", "mro", "get_stack", "print_stack", "__subclasses__"),
    # The refused builtins as attributes too: the builtins module has them all, and a
    # granted `__self__` reaches it from any builtin function (`print.__self__`).
    *("breakpoint", "compile", "eval", "exec", "globals", "locals", "vars", "open"),
    *("getattr", "setattr", "delattr", "input", "memoryview", "dir", "help"),
}
#: Builtins that turn a string into an attribute: accepted with a constant string only.
NAME_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
#: The builtins a body may read although no solution uses them: functions of their
#: arguments alone, the plain types, and (by rule, in `safe_builtin`) the exceptions.
#: Every other builtin is refused (code from text, the namespaces, files, the terminal,
#: the debugger); tests/test_tampering.py holds every builtin of the running Python to
#: one side or the other, so a new builtin on a new Python is refused until it is sorted.
SAFE_BUILTINS = frozenset(
    {
        *("Ellipsis", "False", "None", "NotImplemented", "True", "abs", "aiter", "all"),
        *("anext", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr"),
        *("classmethod", "complex", "dict", "divmod", "enumerate", "filter", "float"),
        *("frozenset", "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len"),
        *("list", "map", "max", "min", "next", "object", "oct", "ord", "pow", "print"),
        *("property", "range", "repr", "reversed", "round", "set", "slice", "sorted"),
        *("staticmethod", "str", "sum", "super", "tuple", "type", "zip"),
    }
)
#: Refused builtins: what no answer needs and a cheat would (tests/test_tampering.py holds
#: SAFE_BUILTINS, NAME_BUILTINS and these to cover every builtin).
REFUSED_BUILTINS = frozenset(
    {
        *("breakpoint", "compile", "copyright", "credits", "dir", "eval", "exec", "exit"),
        *("format", "globals", "help", "input", "license", "locals", "memoryview", "open"),
        *("quit", "vars"),
    }
)
#: Modules a body may import from although no solution does: data structures and
#: arithmetic, which reach nothing else.  Their public names are allowed attributes.
PURE_MODULES = ("bisect", "collections", "heapq", "itertools", "math")
#: Python's own names an answer may well use, and that lead nowhere: a name for a message,
#: the type of an object (as `type` gives it), a call to the parent's method.
HARMLESS = frozenset(
    {"__name__", "__qualname__", "__class__", "__init__", "__iter__", "__next__", "__repr__"}
)

#: What a name in each field of the grammar does: binds a name of the body's own, reads
#: a name, names an attribute, names the parameter of a function called (`key=`), names
#: what an import takes, or declares a name global.  A Name's `id` binds or reads by its
#: context.  Fields are (node type, field) as `ast`'s own grammar (its docstrings) names them.
BINDS, READS, ATTRIBUTE, KEYWORD, IMPORT, GLOBAL = (
    "binds",
    "reads",
    "attribute",
    "keyword",
    "import",
    "global",
)
NAME_FIELDS: dict[tuple[str, str], str] = {
    ("Name", "id"): READS,  # or BINDS, when stored or deleted
    ("Attribute", "attr"): ATTRIBUTE,
    ("MatchClass", "kwd_attrs"): ATTRIBUTE,  # `case Point(x=0)` reads the attribute x
    ("keyword", "arg"): KEYWORD,
    ("arg", "arg"): BINDS,
    ("FunctionDef", "name"): BINDS,
    ("AsyncFunctionDef", "name"): BINDS,
    ("ClassDef", "name"): BINDS,
    ("ExceptHandler", "name"): BINDS,
    ("MatchAs", "name"): BINDS,
    ("MatchStar", "name"): BINDS,
    ("MatchMapping", "rest"): BINDS,
    ("TypeVar", "name"): BINDS,  # 3.12: def f[T]()
    ("ParamSpec", "name"): BINDS,
    ("TypeVarTuple", "name"): BINDS,
    ("Nonlocal", "names"): BINDS,
    ("Global", "names"): GLOBAL,
    ("alias", "name"): IMPORT,
    ("alias", "asname"): IMPORT,
    ("ImportFrom", "module"): IMPORT,
}


def name_fields() -> dict[str, tuple[str, ...]]:
    """Every field of the running Python's `ast` that holds a name, by node type.

    Read from the grammar: each node class's docstring is its rule in ASDL
    (``Name(identifier id, expr_context ctx)``), and a field of type ``identifier``
    holds a name.
    """
    found: dict[str, tuple[str, ...]] = {}
    for name in dir(ast):
        node = getattr(ast, name)
        doc = getattr(node, "__doc__", None) or ""
        if isinstance(node, type) and issubclass(node, ast.AST) and doc.startswith(f"{name}("):
            fields = re.findall(r"\bidentifier[?*]? (\w+)", doc.partition("\n")[0])
            if fields:
                found[name] = tuple(fields)
    return found


GRAMMAR = name_fields()


def safe_builtin(name: str) -> bool:
    """Whether a body may read the builtin ``name``: SAFE_BUILTINS, and the exceptions."""
    value = getattr(builtins, name, None)
    is_exception = isinstance(value, type) and issubclass(value, BaseException)
    return name in SAFE_BUILTINS or (is_exception and not name.startswith("_"))


def dunder(name: str) -> bool:
    """Whether a name is one of Python's own (`__globals__`), other than HARMLESS: a way
    into the interpreter."""
    return name.startswith("__") and name.endswith("__") and name not in HARMLESS


def on_self(node: ast.Attribute) -> bool:
    """Whether an attribute is taken of ``self``, the object whose method the body is."""
    return isinstance(node.value, ast.Name) and node.value.id == "self"


def canonical(node: object) -> str:
    """A syntax tree as text that reads the same on every Python from 3.11 on.

    `ast.dump` does not: 3.12 shows the new field ``type_params=[]``, 3.13 leaves every
    empty field out.  Here a field that is empty (None, ``[]``) is always left out, and
    line numbers never appear.
    """
    if isinstance(node, ast.AST):
        fields = []
        for field in node._fields:
            value = getattr(node, field, None)
            if value is not None and value != [] and field != "type_comment":
                fields.append(f"{field}={canonical(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical(item) for item in node) + "]"
    return repr(node)


@dataclass(frozen=True)
class Item:
    """One piece of a module's outline: where it starts, what it is, and its digest."""

    line: int
    label: str
    digest: str


def _dump(node: ast.AST) -> str:
    return hashlib.sha256(canonical(node).encode()).hexdigest()[:16]


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


def _signature(function: FunctionNode) -> ast.AST:
    """The function without its body, its parameters' names left out: a student may
    rename a parameter (the body is judged with the new name)."""
    signature = copy.deepcopy(function)
    signature.body = []
    arguments = signature.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    for argument in [*every, arguments.vararg, arguments.kwarg]:
        if argument is not None:
            argument.arg = "_"
    return signature


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
                items.append(Item(node.lineno, label, _dump(_signature(node))))
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


def names_in(node: ast.AST) -> Iterator[tuple[ast.AST, str, str]]:
    """Each name ``node`` holds itself: the node, the field's role (NAME_FIELDS) and the
    name.  A name in a field the grammar has and NAME_FIELDS does not is yielded with the
    role "unknown", to be refused."""
    kind = type(node).__name__
    for field in GRAMMAR.get(kind, ()):
        value = getattr(node, field, None)
        role = NAME_FIELDS.get((kind, field), "unknown")
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            role = BINDS
        for name in value if isinstance(value, list) else [value]:
            if isinstance(name, str):
                yield node, role, name


@dataclass(frozen=True)
class Module:
    """What the handout's file gives a body, read outside the emptied bodies: the names
    it binds at its top that are not modules, the names of the modules it imports, and
    the attributes it uses."""

    names: frozenset[str]
    modules: frozenset[str]
    attributes: frozenset[str]
    classes: frozenset[str] = frozenset()  # the classes it defines at its top


def module_facts(tree: ast.Module, emptied: Iterable[str]) -> Module:
    """The module's own names and attributes (see Module), the emptied bodies left out."""
    bodies = {id(statement) for _, f in functions(tree, emptied) for statement in f.body}
    names: set[str] = set()
    modules: set[str] = set()
    attributes: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    todo: list[ast.AST] = [tree]
    while todo:
        inner = todo.pop()
        if id(inner) in bodies:
            continue
        if isinstance(inner, ast.Attribute):
            attributes.add(inner.attr)
        elif isinstance(inner, ast.ClassDef):
            # A class's own methods and fields are attributes of its instances.
            attributes |= {n.name for n in inner.body if isinstance(n, FunctionNode)}
            attributes |= {t.id for n in inner.body for t in _targets(n)}
        todo.extend(ast.iter_child_nodes(inner))
    names = {n for n in names - modules if not dunder(n) and n not in MODULES}
    attributes = {a for a in attributes if a not in DENIED_ATTRIBUTES and not dunder(a)}
    classes = frozenset(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    return Module(frozenset(names), frozenset(modules), frozenset(attributes), classes)


def _targets(statement: ast.stmt) -> list[ast.Name]:
    """The plain names a class-level statement assigns."""
    if isinstance(statement, ast.Assign):
        return [t for t in statement.targets if isinstance(t, ast.Name)]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target]
    return []


def _value_methods() -> frozenset[str]:
    """The public methods of Python's plain value types, which reach nothing but the value."""
    from collections import deque

    generator = type(x for x in "")
    kinds: tuple[type, ...] = (list, dict, set, frozenset, tuple, str, bytes, bytearray)
    kinds += (int, float, deque, BaseException, generator)
    return (
        frozenset(name for kind in kinds for name in dir(kind) if not name.startswith("_"))
        - DENIED_ATTRIBUTES
    )


#: Methods of the plain value types (`append`, `popleft`, `items`): allowed attributes.
METHODS = _value_methods()

#: Parts of a name that reach past the crawl: other processes and threads, signals, files
#: and descriptors, the debugger, frames.  A lesson's attribute holding one is refused.
REACHES_PAST = re.compile(
    "subprocess|exec|thread|fork|signal|spawn|process|pipe|child|watcher|policy|debug"
    "|stack|frame|trace|file|fd|dup|share|detach"
)


#: The modules the three stages import for their work, beside their own and MODULES: an
#: answer may reach for their public names, as a student who read their documentation
#: would.  Written here, not read from the stages' files, which are the student's in a
#: handout (tests/test_tampering.py holds it to what the stages import).
LESSON_MODULES = (
    *("aiohttp", "asyncio", "collections", "collections.abc", "contextlib", "dataclasses"),
    *("functools", "heapq", "itertools", "selectors", "socket", "ssl", "time", "typing"),
    *("yarl", "shared.aiohttp_wire", "shared.crawling", "shared.httpwire", "shared.log"),
    *("shared.observe", "shared.resolver", "shared.responses", "shared.tls"),
    *("shared.tools.run_stage", "stage1_callbacks.loop", "stage2_generators.futures"),
    *("stage2_generators.loop", "stage2_generators.queues", "stage2_generators.sockets"),
    "stage2_generators.tasks",
)


@functools.cache
def lesson_attributes() -> frozenset[str]:
    """The public names of the modules the stages work with, and of their classes (a
    Queue's `empty`, a socket's `sendall`, asyncio's `Lock`): an answer may reach for any
    of them, as a student who read their documentation would, and be judged by the tests.
    Not one that blocks the loop (BLOCKING: refused with the chapter's reason), nor one
    that reaches past the crawl (REACHES_PAST), nor a denied one."""
    import importlib

    found: set[str] = set()
    for name in LESSON_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # the browser build has no yarl: no answer there can use it
            continue
        for public in (n for n in dir(module) if not n.startswith("_")):
            found.add(public)
            value = getattr(module, public)
            if isinstance(value, type):
                found |= {n for n in dir(value) if not n.startswith("_")}
    return (
        frozenset(n for n in found if not REACHES_PAST.search(n.lower()) and n not in BLOCKING)
        - DENIED_ATTRIBUTES
    )


def _pure_import(node: ast.Import | ast.ImportFrom) -> bool:
    """Whether an import takes only public names from PURE_MODULES (and their submodules)."""
    if isinstance(node, ast.ImportFrom):
        pure = node.level == 0 and (node.module or "").partition(".")[0] in PURE_MODULES
        return pure and all(not a.name.startswith("_") and a.name != "*" for a in node.names)
    return all(a.name.partition(".")[0] in PURE_MODULES for a in node.names)


def _public_names(modules: Iterable[str]) -> frozenset[str]:
    """The public names of PURE_MODULES among ``modules``: what their attributes may be."""
    import importlib

    found: set[str] = set()
    for name in modules:
        if name.partition(".")[0] in PURE_MODULES:
            found |= {n for n in dir(importlib.import_module(name)) if not n.startswith("_")}
    return frozenset(found)


def granted(references: Iterable[FunctionNode]) -> set[str]:
    """Every name the reference solutions use (in a field of the grammar, or as a string
    that is a name), and their imports and `global` statements (as "import:DIGEST" and
    "global:NAME"): allowed to the student too."""
    found: set[str] = set()
    for function in references:
        for statement in function.body:
            for node in ast.walk(statement):
                found |= {name for _, _, name in names_in(node)}
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found |= {node.value} if node.value.isidentifier() else set()
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found.add(f"import:{_dump(node)}")
                elif isinstance(node, ast.Global):
                    found |= {f"global:{name}" for name in node.names}
    return found


#: The builtin types a class pattern matches by position as themselves (`case int(n)`).
SELF_MATCHING = frozenset(
    {"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int", "list", "set", "str"}
    | {"tuple"}
)


def starred(node: ast.Call) -> bool:
    """Whether a call spreads its arguments from a sequence or a mapping (`*a`, `**k`)."""
    return any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    )


class Judge:
    """The allow-list for the bodies of one student's file: see the module's docstring."""

    def __init__(self, module: Module, allowed: set[str]) -> None:
        self.module = module
        self.allowed = allowed
        self.vetted: set[int] = set()  # the `getattr` of a call found harmless, by id
        self.params: set[int] = set()  # the function's own parameters, by id
        self.local: set[str] = set()  # the names the body binds
        self.stored: set[str] = set()  # the attributes the body sets on self: its own too
        self.imported: frozenset[str] = frozenset()  # public names of PURE_MODULES imported

    def fresh(self, name: str) -> bool:
        """Whether a body may bind ``name`` as its own (a local, or an attribute of self).

        Not a refused builtin, nor a module of MODULES or of the file's imports, nor a
        dunder: a name that would hide one of those.  (A local named as any other module,
        `queue` say, imports nothing: it is the student's.)
        """
        if name in self.allowed:
            return True
        refused = name in REFUSED_BUILTINS or name in NAME_BUILTINS or name in MODULES
        return not (refused or dunder(name) or name in self.module.modules)

    def attribute(self, name: str) -> bool:
        """Whether a body may name the attribute ``name``."""
        if name in self.allowed:
            return True
        if name in DENIED_ATTRIBUTES or dunder(name):
            return False
        known = self.module.attributes | METHODS | self.imported | HARMLESS
        return name in known or name in lesson_attributes()

    def read(self, name: str) -> bool:
        """Whether a body may read the name ``name``: a builtin that turns a string into a
        name only as the function of a call `call` found plain (never as a value to pass on)."""
        if name in NAME_BUILTINS and name not in self.local:
            return False
        return (
            name in self.local
            or name in self.allowed
            or name in self.module.names
            or (name in self.module.modules and name not in MODULES)  # `asyncio`, `socket`
            or (safe_builtin(name) and name not in self.module.modules)
        )

    def body(self, function: FunctionNode) -> list[tuple[int, str]]:
        """What the function's parameters and body use that the allow-list refuses."""
        every = [inner for node in [function.args, *function.body] for inner in ast.walk(node)]
        # The function's own parameters may take any name: the handout fixes their
        # defaults, and in the whole body the name is the parameter, never a builtin.
        arguments = function.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        self.params = {id(a) for a in [*params, arguments.vararg, arguments.kwarg] if a}
        imports = [n for n in every if isinstance(n, ast.Import | ast.ImportFrom)]
        self.local = {name for node in every for _, role, name in names_in(node) if role == BINDS}
        self.local |= {a.asname or a.name.partition(".")[0] for n in imports for a in n.names}
        # An attribute the body sets on self is its own, to read on self again: on any
        # other object, a name set in dead code would open any attribute at all.
        stores = [n for n in every if isinstance(n, ast.Attribute) and on_self(n)]
        self.stored = {n.attr for n in stores if not isinstance(n.ctx, ast.Load)}
        modules = [a.name for n in imports if isinstance(n, ast.Import) for a in n.names]
        modules += [n.module for n in imports if isinstance(n, ast.ImportFrom) and n.module]
        self.imported = _public_names(m for m in modules if m.partition(".")[0] in PURE_MODULES)
        found: list[tuple[int, str]] = []
        for node in every:  # breadth first: a call comes before the name it calls
            line = getattr(node, "lineno", function.lineno)
            found += [(line, what) for what in self.node(node)]
        return found

    def node(self, node: ast.AST) -> Iterator[str]:
        """What one node of a body holds that the allow-list refuses, said for the student."""
        if isinstance(node, ast.Import | ast.ImportFrom):
            if f"import:{_dump(node)}" not in self.allowed and not _pure_import(node):
                yield "an import"
            if isinstance(node, ast.ImportFrom):
                yield from (
                    f"`{a.asname}`" for a in node.names if a.asname and not self.fresh(a.asname)
                )
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            yield from self.call(node, node.func)
        if isinstance(node, ast.MatchClass) and node.patterns and not self.matchable(node.cls):
            # `case C(x)` reads the attribute C.__match_args__ names: a string of the class's
            # (a namedtuple's field, a registered subclass), which no judge can see.
            yield "a class pattern by position of a class not the module's own"
        for _, role, name in names_in(node):
            binds = role == BINDS and id(node) not in self.params and not self.fresh(name)
            reads = role == READS and id(node) not in self.vetted and not self.read(name)
            if binds or reads:
                yield f"`{name}`"
            elif role == ATTRIBUTE and not self.attribute(name):
                mine = isinstance(node, ast.Attribute) and on_self(node) and name in self.stored
                if not (mine and self.fresh(name)):
                    yield f"`.{name}`"
            elif role == KEYWORD and dunder(name):
                yield f"`{name}=`"
            elif role == GLOBAL and f"global:{name}" not in self.allowed:
                yield "`global`"
            elif role == "unknown":
                yield f"`{name}` ({type(node).__name__}, syntax the grader does not know)"

    def matchable(self, cls: ast.expr) -> bool:
        """Whether a class pattern may match by position: a plain type matching itself
        (`case int(n)`), or a class the handout's module defines (its names are the
        teacher's)."""
        if not isinstance(cls, ast.Name) or cls.id in self.local:
            return False
        return cls.id in SELF_MATCHING or cls.id in self.module.classes

    def call(self, node: ast.Call, function: ast.Name) -> Iterator[str]:
        """A call that turns a string into a name (NAME_BUILTINS), or `type` that makes a
        class: accepted only in the forms that do neither."""
        name = function.id
        # Granted or not, a name turned from a string is a constant one: a reference that
        # uses getattr(x, "__self__") grants that, not getattr of anything built at run time.
        # Its arguments are plain ones in their places: `getattr(*(x, "any"), "other")`
        # puts "other" third, where the default goes.
        if name in NAME_BUILTINS and name not in self.local:
            self.vetted.add(id(function))
            given = node.args[1] if len(node.args) > 1 else None
            plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)
            counts = {"getattr": (2, 3), "hasattr": (2,), "setattr": (3,), "delattr": (2,)}
            if not (
                plain
                and len(node.args) in counts[name]
                and isinstance(given, ast.Constant)
                and isinstance(given.value, str)
                and self.attribute(given.value)
            ):
                yield f"`{name}` of a name that is not a plain attribute"
        elif name == "type" and (len(node.args) != 1 or node.keywords or starred(node)):
            yield "`type` with more than one argument (it makes a class)"


#: Names that block the loop when a body calls them: the chapter's first warning.
BLOCKING = frozenset({"sleep", "time", "input", "select", "getaddrinfo", "recv", "accept"})
#: Names that reach into the interpreter, past the code under test.
INTERPRETER = MODULES | REFUSED_BUILTINS | NAME_BUILTINS | DENIED_ATTRIBUTES


def why(what: str) -> str:
    """Why a body may not use ``what`` (as `Judge.node` says it), in the chapter's terms."""
    name = what.strip("`").lstrip(".").partition("`")[0].rstrip("=")
    if what == "an import":
        return say("en", "code.why-import")
    if what == "`global`":
        return say("en", "code.why-global")
    if name in BLOCKING:
        return say("en", "code.why-blocks", name=name)
    if name in INTERPRETER or dunder(name) or what.startswith(("`getattr", "`type")):
        return say("en", "code.why-interpreter")
    if REACHES_PAST.search(name.lower()):
        return say("en", "code.why-past")
    return say("en", "code.why-unneeded")


def body_problems(
    path: str, qualname: str, function: FunctionNode, module: Module, allowed: set[str]
) -> list[str]:
    """What the body of ``function`` uses that no solution of the exercise needs, by line,
    and why each is refused."""
    found = Judge(module, allowed).body(function)
    return [
        say("en", "code.body", path=path, line=line, what=what, function=qualname, why=why(what))
        for line, what in sorted(set(found))
    ]


#: The most a student's file may hold: far more than any answer, far less than a trap.
MAX_BYTES = 1024 * 1024
#: Characters a reader and Python read differently: line breaks of str.splitlines that
#: Python's tokenizer does not break at, and the bidirectional controls.
MISREAD = re.compile("[\x0b\x1c-\x1e\x85\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: A coding declaration (PEP 263), as Python finds it on the first two lines.
CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def as_read(path: str, source: bytes) -> tuple[str | None, list[str]]:
    """The file's text as a teacher and Python both read it, or why it cannot be.

    UTF-8 only, and no coding declaration of another encoding: Python would run text
    that neither the check nor `grade --diff` nor the teacher reads.
    """
    for line in source.splitlines()[:2]:
        declared = CODING.match(line)
        if declared and declared.group(1).lower().replace(b"_", b"-") not in (b"utf-8", b"utf8"):
            encoding = declared.group(1).decode("ascii", "replace")
            return None, [say("en", "file.encoding", path=path, encoding=encoding)]
    try:
        text = source.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return None, [say("en", "file.not-utf8", path=path, offset=error.start)]
    if found := MISREAD.search(text):
        # A reader's line break that is none for Python (U+2028 shifts what --diff shows
        # against the lines the judge names), or a bidirectional control that reorders
        # what a reader sees (Trojan Source, CVE-2021-42574).
        character = f"U+{ord(found[0]):04X}"
        return None, [say("en", "file.misread", path=path, character=character)]
    return text, []


def judge(
    path: str,
    source: bytes,
    emptied: list[str],
    expected: list[tuple[str, str]],
    allowed: set[str],
) -> list[str]:
    """Everything the student's file ``path`` does beyond writing the bodies of ``emptied``.

    ``expected`` is the handout's outline (label and digest of each item); ``allowed`` what
    the reference solutions use (see `granted`).  A file that does not parse is no
    tampering: it is a wrong answer, and the tests say so.  A file too deep to be read
    cannot be judged, and is named (no answer nests a hundred levels).
    """
    text, found = as_read(path, source)
    if text is None:
        return found
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    except (RecursionError, MemoryError):
        return [say("en", "file.too-deep", path=path)]
    try:
        found = compare_outlines(path, outline(tree, emptied), expected)
        module = module_facts(tree, emptied)
        for qualname, function in functions(tree, emptied):
            found += body_problems(path, qualname, function, module, allowed)
    except (RecursionError, MemoryError):
        return [say("en", "file.too-deep", path=path)]
    return found


def expected_outline(source: bytes, emptied: list[str]) -> list[tuple[str, str]]:
    """The handout's outline of a file, as `judge` takes it (and a manifest keeps it)."""
    return [(item.label, item.digest) for item in outline(ast.parse(source), emptied)]


def facts(exercise: Exercise) -> dict[str, Any]:
    """What judging the exercise's files needs, from the repository: each file's emptied
    functions and handout outline, and the names the reference solutions are `granted`.

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


def regular_file(file: Path, limit: int = MAX_BYTES) -> str | None:
    """Why ``file`` is not a plain file of at most ``limit`` bytes that a teacher can read
    (a link, a device, a pipe, a folder, too large), or None when it is one."""
    import stat

    try:
        status = file.lstat()
    except OSError:
        return None  # missing: no tampering, the tests fail
    if stat.S_ISLNK(status.st_mode):
        return "a link"
    if not stat.S_ISREG(status.st_mode):
        return "not a plain file"
    return "too large" if status.st_size > limit else None


def judge_folder(folder: Path, known: Mapping[str, Any]) -> list[str]:
    """What the student's files in ``folder`` do beyond the emptied bodies, by file and line.

    ``known`` is what `facts` gives; a missing student file is no tampering (the tests fail).
    """
    found: list[str] = []
    allowed = set(known["granted"])
    for path, entry in sorted(known["files"].items()):
        file = folder / path
        why = regular_file(file)
        if why is not None:
            found.append(say("en", "file.not-plain", path=path, why=why))
        elif file.exists():
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
