"""Make the mutants of a function: small deliberate mistakes, one at a time, on its source text.

A mutant is one edit of a file's text: a span of bytes and what replaces it.  The edit is
made on the text, not by re-printing the tree with `ast.unparse`, so that everything else
(comments, blank lines, the other functions) stays byte for byte what it was.  Each edit
is then proven: the edited text must parse to exactly the tree that the same change makes
when it is applied to the original tree.  An edit that does not (an operator found in a
comment, say) is dropped, so no mutant is something other than what its name says.

The kinds of mistake, each named by what it does to the code:

- a comparison turned round: ``==`` and ``!=``, ``<`` and ``<=``, ``>`` and ``>=``,
  ``is`` and ``is not``, ``in`` and ``not in``;
- arithmetic swapped: ``+`` and ``-`` (in ``+=`` and ``-=`` too), ``*`` and ``//``;
- ``and`` and ``or``; a ``not`` removed; an ``if``'s condition negated;
- ``True`` and ``False``; a whole number off by one (``n`` to ``n + 1``);
- ``break`` and ``continue``; ``raise`` made ``return`` (the error passed over in silence);
- ``return X`` made ``return None``;
- a statement removed: a call, a ``yield from`` or ``await`` whose value is not used, or an
  assignment to an attribute or an item, or an augmented assignment, becomes ``pass``.

The order is the source's, so the mutants of a function and their numbers are the same on
every run as long as the function's text is.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
#: Where a node sits below the function: (field, index in a list field or None) per step.
NodePath = tuple[tuple[str, int | None], ...]

# The comparison operators and their partners, with the text each is written as.
COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
COMPARE_TEXT: dict[type[ast.cmpop], tuple[str, str]] = {
    # (a pattern that finds the operator between its operands, the text that writes it)
    # Only one operator stands between two operands, so `<` cannot be part of a `<=` there.
    ast.Eq: (r"==", "=="),
    ast.NotEq: (r"!=", "!="),
    ast.Lt: (r"<", "<"),
    ast.LtE: (r"<=", "<="),
    ast.Gt: (r">", ">"),
    ast.GtE: (r">=", ">="),
    ast.Is: (r"\bis\b", "is"),
    ast.IsNot: (r"\bis\s+not\b", "is not"),
    ast.In: (r"\bin\b", "in"),
    ast.NotIn: (r"\bnot\s+in\b", "not in"),
}
BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
}
BINOP_TEXT: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: (r"\+", "+"),
    ast.Sub: (r"-", "-"),
    ast.Mult: (r"\*(?!\*)", "*"),
    ast.FloorDiv: (r"//", "//"),
}


@dataclass(frozen=True)
class Mutant:
    """One mistake made in one function: where, what kind, and the edit that makes it."""

    path: str  # the file, relative to the repository, with forward slashes
    qualname: str  # the function, "Class.method" or "function"
    number: int  # its place among the function's mutants, from 1, in source order
    kind: str  # what the edit does, in a few words: "== to !="
    line: int  # the 1-based line the edit starts on
    before: str  # that line as it was, stripped
    after: str  # the edited line(s), stripped and joined by " / "
    start: int  # the edit's byte span in the file's UTF-8 text
    stop: int
    replacement: str  # what replaces the span

    @property
    def ident(self) -> str:
        """A short name: package, module, function, number (``stage2.queues.Queue.join.3``)."""
        package, stem = Path(self.path).parent.name, Path(self.path).stem
        return f"{package.partition('_')[0]}.{stem}.{self.qualname}.{self.number}"

    @property
    def key(self) -> str:
        """What identifies the mistake whatever line it is on: function, kind and texts."""
        return f"{self.path}:{self.qualname}|{self.kind}|{self.before}|{self.after}"

    def apply(self, text: str) -> str:
        """The file's text with this mutant's edit made."""
        data = text.encode("utf-8")
        return (data[: self.start] + self.replacement.encode("utf-8") + data[self.stop :]).decode(
            "utf-8"
        )

    def rank(self) -> str:
        """A stable pseudo-random order for sampling: the SHA-256 of the key, in hex."""
        return hashlib.sha256(self.key.encode("utf-8")).hexdigest()


class Source:
    """A file's text with conversions between (line, column) positions and byte offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        self.line_starts = [0]
        for index, byte in enumerate(self.data):
            if byte == 0x0A:
                self.line_starts.append(index + 1)

    def offset(self, lineno: int, col: int) -> int:
        """The byte offset of ``ast``'s (1-based line, UTF-8 byte column)."""
        return self.line_starts[lineno - 1] + col

    def start_of(self, node: ast.AST) -> int:
        """Where a node's text begins."""
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end_of(self, node: ast.AST) -> int:
        """Where a node's text ends (one past its last byte)."""
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def slice(self, start: int, stop: int) -> str:
        """The text between two byte offsets."""
        return self.data[start:stop].decode("utf-8")

    def line_at(self, offset: int) -> int:
        """The 1-based line an offset falls on."""
        low, high = 0, len(self.line_starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.line_starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1

    def lines(self, first: int, last: int, data: bytes | None = None) -> str:
        """Lines ``first`` to ``last`` (1-based) of this text or of ``data``, stripped, joined."""
        text = (self.data if data is None else data).decode("utf-8").splitlines()
        return " / ".join(line.strip() for line in text[first - 1 : last] if line.strip())


class MutantError(ValueError):
    """A function that cannot be found, or a target written wrongly."""


def find_function(tree: ast.Module, qualname: str) -> FunctionNode:
    """The function or method ``qualname`` defines at the top of the module or of a class."""
    scope: list[ast.stmt] = tree.body
    parts = qualname.split(".")
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        for node in scope:
            if last and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name == part:
                    return node
            elif not last and isinstance(node, ast.ClassDef) and node.name == part:
                scope = node.body
                break
        else:
            raise MutantError(f"no {'.'.join(parts[: depth + 1])}")
    raise MutantError(f"no {qualname}")


def functions_of(tree: ast.Module) -> list[str]:
    """The qualified names of the module's functions and methods, in source order."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names += [
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return names


def _walk(node: ast.AST, path: NodePath) -> Iterator[tuple[ast.AST, NodePath]]:
    """Every node below ``node`` in source order, with its path; nested scopes left out."""
    for field, value in ast.iter_fields(node):
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if not isinstance(child, ast.AST):
                continue
            step = (field, index if isinstance(value, list) else None)
            yield child, (*path, step)
            nested = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
            if not isinstance(child, nested):
                yield from _walk(child, (*path, step))


def _get(root: ast.AST, path: NodePath) -> ast.AST:
    node = root
    for field, index in path:
        value = getattr(node, field)
        node = value[index] if index is not None else value
    return node


def _put(root: ast.AST, path: NodePath, new: ast.AST) -> None:
    parent = _get(root, path[:-1])
    field, index = path[-1]
    if index is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[index] = new


@dataclass
class _Edit:
    """A proposed mutant before it is proven: the text edit and the tree change it stands for."""

    kind: str
    path: NodePath
    change: Callable[[ast.AST], ast.AST]  # the original node to its mutated copy
    start: int
    stop: int
    replacement: str


def _operator_between(
    source: Source, left: ast.AST, right: ast.AST, pattern: str
) -> tuple[int, int] | None:
    """The byte span of the operator written between two operands, found by ``pattern``."""
    start, stop = source.end_of(left), source.start_of(right)
    gap = source.slice(start, stop)
    match = re.search(pattern, gap)
    if match is None:
        return None
    before = len(gap[: match.start()].encode("utf-8"))
    return start + before, start + before + len(match.group().encode("utf-8"))


def _with(node: ast.AST, **fields: object) -> ast.AST:
    """A deep copy of ``node`` with some fields replaced."""
    new = copy.deepcopy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _edits(source: Source, function: FunctionNode) -> Iterator[_Edit]:
    """Every mutation the function's body offers, in source order, not yet proven."""
    body_start = function.body[0]
    if (
        isinstance(body_start, ast.Expr)
        and isinstance(body_start.value, ast.Constant)
        and isinstance(body_start.value.value, str)
    ):
        statements = function.body[1:]
        first_index = 1
    else:
        statements = function.body
        first_index = 0
    for index, statement in enumerate(statements, start=first_index):
        top: NodePath = (("body", index),)
        yield from _statement_edits(source, statement, top)
        for node, path in _walk(statement, top):
            if isinstance(node, ast.stmt):
                yield from _statement_edits(source, node, path)
            else:
                yield from _expression_edits(source, node, path)


#: Calls whose removal no test should notice: messages for a reader of the log.
LOGGING_NAMES = ("LOGGER", "logger", "log", "logging")


def _removable(node: ast.stmt) -> bool:
    """Whether removing the statement is a mistake worth making.

    A call, `yield from` or `await` whose value is not used, or a store into an
    attribute or an item (a store into a plain name mostly makes a NameError later, which
    tells nothing), or an augmented assignment.  Not a call that only logs.
    """
    if isinstance(node, ast.Expr):
        value = node.value
        if isinstance(value, ast.Call):
            function = value.func
            owner = function.value if isinstance(function, ast.Attribute) else function
            return not (isinstance(owner, ast.Name) and owner.id in LOGGING_NAMES)
        return isinstance(value, ast.Await | ast.YieldFrom | ast.Yield)
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets)
    if isinstance(node, ast.AnnAssign):
        return node.value is not None and isinstance(node.target, ast.Attribute | ast.Subscript)
    return False


def _replaced_by(new: ast.stmt) -> Callable[[ast.AST], ast.AST]:
    """A change that puts ``new`` where the old statement was."""
    return lambda old: ast.copy_location(new, old)


def _negated(old: ast.AST) -> ast.AST:
    assert isinstance(old, ast.expr)
    return ast.UnaryOp(ast.Not(), copy.deepcopy(old))


def _operand(old: ast.AST) -> ast.AST:
    assert isinstance(old, ast.UnaryOp)
    return copy.deepcopy(old.operand)


def _statement_edits(source: Source, node: ast.stmt, path: NodePath) -> Iterator[_Edit]:
    start, stop = source.start_of(node), source.end_of(node)
    if isinstance(node, ast.Break):
        yield _Edit(
            "break to continue", path, _replaced_by(ast.Continue()), start, stop, "continue"
        )
    elif isinstance(node, ast.Continue):
        yield _Edit("continue to break", path, _replaced_by(ast.Break()), start, stop, "break")
    elif isinstance(node, ast.Raise) and node.exc is not None:
        yield _Edit("raise to return", path, _replaced_by(ast.Return(None)), start, stop, "return")
    elif (
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        none = ast.Return(ast.Constant(None))
        yield _Edit("return None", path, _replaced_by(none), start, stop, "return None")
    elif _removable(node):
        yield _Edit("statement removed", path, _replaced_by(ast.Pass()), start, stop, "pass")
    if isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
        old_text, new_op = BINOP_TEXT[type(node.op)], BINOP_SWAPS[type(node.op)]
        found = _operator_between(source, node.target, node.value, old_text[0])
        if found:
            new_text = BINOP_TEXT[new_op][1]
            yield _Edit(
                f"{old_text[1]}= to {new_text}=",
                path,
                functools.partial(_with, op=new_op()),
                *found,
                new_text,
            )
    if isinstance(node, ast.If | ast.While):
        test = node.test
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            begin, end = source.start_of(test), source.end_of(test)
            yield _Edit(
                "condition negated",
                (*path, ("test", None)),
                _negated,
                begin,
                end,
                f"not ({source.slice(begin, end)})",
            )


def _expression_edits(source: Source, node: ast.AST, path: NodePath) -> Iterator[_Edit]:
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            old_text, new_type = COMPARE_TEXT[type(op)], COMPARE_SWAPS[type(op)]
            found = _operator_between(source, operands[i], operands[i + 1], old_text[0])
            if found is None:
                continue
            ops = [*node.ops]
            ops[i] = new_type()
            new_text = COMPARE_TEXT[new_type][1]
            change = functools.partial(_with, ops=ops)
            yield _Edit(f"{old_text[1]} to {new_text}", path, change, *found, new_text)
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAPS:
        old_text, new_op = BINOP_TEXT[type(node.op)], BINOP_SWAPS[type(node.op)]
        found = _operator_between(source, node.left, node.right, old_text[0])
        if found:
            new_text = BINOP_TEXT[new_op][1]
            change = functools.partial(_with, op=new_op())
            yield _Edit(f"{old_text[1]} to {new_text}", path, change, *found, new_text)
    elif isinstance(node, ast.BoolOp):
        yield from _boolop_edits(source, node, path)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        start = source.start_of(node)
        match = re.match(r"not\s*", source.slice(start, source.end_of(node.operand)))
        if match:
            stop = start + len(match.group().encode("utf-8"))
            yield _Edit("not removed", path, _operand, start, stop, "")
    elif isinstance(node, ast.Constant):
        start, stop = source.start_of(node), source.end_of(node)
        value = node.value
        if isinstance(value, bool):
            change = functools.partial(_with, value=not value)
            yield _Edit(f"{value} to {not value}", path, change, start, stop, str(not value))
        elif isinstance(value, int) and source.slice(start, stop).isdigit():
            change = functools.partial(_with, value=value + 1)
            yield _Edit(f"{value} to {value + 1}", path, change, start, stop, str(value + 1))


def _boolop_edits(source: Source, node: ast.BoolOp, path: NodePath) -> Iterator[_Edit]:
    """``and`` and ``or`` swapped: one edit rewrites every operator of the chain."""
    word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
    spans = [
        _operator_between(source, a, b, rf"\b{word}\b")
        for a, b in zip(node.values, node.values[1:], strict=False)
    ]
    if not all(spans):
        return
    found = [span for span in spans if span is not None]
    start, stop = found[0][0], found[-1][1]
    pieces, at = [], start
    for span_start, span_stop in found:
        pieces += [source.slice(at, span_start), other]
        at = span_stop
    new_op = ast.Or() if word == "and" else ast.And()
    change = functools.partial(_with, op=new_op)
    yield _Edit(f"{word} to {other}", path, change, start, stop, "".join(pieces))


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def mutants_of(path: str, text: str, qualname: str) -> list[Mutant]:
    """Every proven mutant of one function of the file ``path`` whose text is ``text``."""
    source = Source(text)
    function = find_function(ast.parse(text), qualname)
    found: list[Mutant] = []
    for edit in _edits(source, function):
        # The edit lies inside the function, so the function is what it may change.
        expected = copy.deepcopy(function)
        _put(expected, edit.path, edit.change(_get(function, edit.path)))
        new_data = source.data[: edit.start] + edit.replacement.encode() + source.data[edit.stop :]
        try:
            proven = _dump(find_function(ast.parse(new_data), qualname)) == _dump(expected)
        except (SyntaxError, MutantError):
            proven = False
        if not proven:
            continue  # the text edit is not the change it names: no such mutant
        first = source.line_at(edit.start)
        last = source.line_at(max(edit.start, edit.stop - 1))
        new_last = first + edit.replacement.count("\n")
        found.append(
            Mutant(
                path=path,
                qualname=qualname,
                number=len(found) + 1,
                kind=edit.kind,
                line=first,
                before=source.lines(first, last),
                after=source.lines(first, new_last, new_data),
                start=edit.start,
                stop=edit.stop,
                replacement=edit.replacement,
            )
        )
    return found


def parse_target(target: str) -> tuple[str, str | None]:
    """Split ``path:Qualified.name`` (or a bare path: every function of the file)."""
    path, _, qualname = target.partition(":")
    if not path.endswith(".py"):
        raise MutantError(f"{target}: write a Python file, and a function after a colon")
    return path, qualname or None


def mutants_in(root: Path, target: str) -> list[Mutant]:
    """The mutants of a target (``path:function`` or ``path``) in the repository at ``root``."""
    path, qualname = parse_target(target)
    file = root / path
    if not file.is_file():
        raise MutantError(f"{target}: no file {path}")
    text = file.read_text(encoding="utf-8")
    names = [qualname] if qualname else functions_of(ast.parse(text))
    return [mutant for name in names for mutant in mutants_of(path, text, name)]
