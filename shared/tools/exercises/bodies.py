"""Find a function's body in a source file, and swap it, touching nothing else.

An exercise empties functions and `solve` puts them back.  Both work on the text
of the file, with the line numbers `ast` gives: the decorators, the signature, the
docstring and every other line stay byte for byte what they were, comments and
blank lines included, which re-printing the tree with `ast.unparse` would lose.

The *body* here is what follows the docstring (or the signature, when there is no
docstring), up to the last statement: the comments above the first statement belong
to the solution and go with it.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
from dataclasses import dataclass

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
#: The line that follows the `raise` of an emptied generator (see `stub_lines`).
KEEPS_A_GENERATOR = "yield from ()  # yields nothing: it only keeps this function a generator"


class BodyError(ValueError):
    """A function that cannot be found, or whose body is not on lines of its own."""


@dataclass(frozen=True)
class Body:
    """Where one function's body lies in a file's lines, and what kind of function it is."""

    qualname: str
    start: int  # index of the body's first line in the file's list of lines
    stop: int  # index one past its last line
    indent: str  # the indentation of the body's statements
    is_generator: bool  # it yields: a body without `yield` would change what a call returns


def split_lines(text: str) -> list[str]:
    """Return the file's lines with their line endings, so that joining them gives ``text``."""
    return text.splitlines(keepends=True)


def newline_of(lines: list[str]) -> str:
    """Return the line ending the file uses (that of its first line), "\\n" by default."""
    for line in lines:
        stripped = line.rstrip("\r\n")
        if stripped != line:
            return line[len(stripped) :]
    return "\n"


@functools.lru_cache(maxsize=16)
def parse(text: str) -> ast.Module:
    """Parse source text, once: an exercise locates several functions in the same file.

    The trees are only read, never changed, so sharing one is safe.
    """
    return ast.parse(text)


def find_function(tree: ast.Module, qualname: str) -> FunctionNode:
    """Return the function or method ``qualname`` ("Class.method", "function") defines.

    Only definitions at the top of the module or of a class count: not one inside an
    ``if`` or another function.  A name defined twice (a property and its setter) is
    refused rather than guessed at.
    """
    scope: list[ast.stmt] = tree.body
    parts = qualname.split(".")
    node: ast.AST | None = None
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        found = [n for n in scope if isinstance(n, kinds) and n.name == part]
        if not found:
            what = "function or method" if last else "class"
            raise BodyError(f"no {what} {'.'.join(parts[: depth + 1])}")
        if len(found) > 1:
            raise BodyError(f"{'.'.join(parts[: depth + 1])} is defined {len(found)} times")
        node = found[0]
        if not last:
            scope = found[0].body
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    return node


def yields(function: FunctionNode) -> bool:
    """Tell whether the function itself (not a function or class nested in it) yields."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def locate(text: str, qualname: str) -> Body:
    """Find the body of ``qualname`` in the source ``text``.

    Raises SyntaxError if the text does not parse, BodyError if the function is
    missing or its body shares a line with its signature or docstring (``def f(): ...``),
    which line numbers alone cannot cut apart.
    """
    lines = split_lines(text)
    node = find_function(parse(text), qualname)
    statements = node.body
    if _is_docstring(statements[0]):
        docstring = statements[0]
        statements = statements[1:]
        assert docstring.end_lineno is not None
        start = docstring.end_lineno  # 1-based last line of the docstring = 0-based next line
        if statements and statements[0].lineno <= docstring.end_lineno:
            raise BodyError(f"{qualname}: write its code on the lines after the docstring")
        indent = _indent_of(lines[docstring.lineno - 1])
    else:
        first = statements[0]
        if first.lineno <= node.lineno:
            raise BodyError(f"{qualname}: write its body on lines of its own")
        start = first.lineno - 1
        # Comments right above the first statement belong to the body; the line that
        # ends the signature (`) -> None:`) is neither blank nor a comment.
        while start - 1 >= node.lineno and _blank_or_comment(lines[start - 1]):
            start -= 1
        indent = _indent_of(lines[first.lineno - 1])
    if statements:
        end_lineno = statements[-1].end_lineno
        assert end_lineno is not None
        stop = end_lineno
        # Comments after the last statement, indented deeper than `def`, are the body's too.
        own = len(_indent_of(lines[node.lineno - 1]))
        probe = stop
        while probe < len(lines) and _blank_or_comment(lines[probe]):
            if lines[probe].strip() and len(_indent_of(lines[probe])) > own:
                stop = probe + 1
            probe += 1
    else:
        stop = start  # a docstring and nothing else: an empty body
    return Body(qualname, start, stop, indent, yields(node))


def stub_lines(body: Body, message: str, newline: str) -> list[str]:
    """The lines an emptied body gets: a NotImplementedError carrying ``message``."""
    # json.dumps: a double-quoted literal, and every escape it writes is also Python's.
    lines = [f"{body.indent}raise NotImplementedError({json.dumps(message)}){newline}"]
    if body.is_generator:
        # It keeps the function a generator: a caller that expects one (a Task, a
        # `yield from`) gets the error when it runs it, as it would get any error the
        # finished function raised.  `yield from ()` rather than a bare `yield`: a student
        # who writes the body in place of the `raise` line alone leaves this line behind,
        # and then it yields nothing and changes nothing.  A bare `yield` left behind
        # would hand None to the Task driving the function, whose error ("a task may only
        # yield Futures, not None") points far from the leftover line.
        lines.append(f"{body.indent}{KEEPS_A_GENERATOR}{newline}")
    return lines


def _replace(text: str, new_lines: dict[str, list[str]]) -> str:
    """Return ``text`` with the body of each qualname in ``new_lines`` replaced by its lines."""
    lines = split_lines(text)
    bodies = sorted((locate(text, name) for name in new_lines), key=lambda b: b.start)
    for before, after in itertools.pairwise(bodies):
        if after.start < before.stop:
            raise BodyError(f"{before.qualname} and {after.qualname} overlap")
    for body in reversed(bodies):  # from the bottom up, so earlier line numbers hold
        lines[body.start : body.stop] = new_lines[body.qualname]
    return "".join(lines)


def empty_functions(text: str, qualnames: list[str], message_for: dict[str, str]) -> str:
    """Return ``text`` with the bodies of ``qualnames`` replaced by ``raise NotImplementedError``.

    ``message_for`` maps each qualname to its error message.  Every other line of
    the file is kept as it was.
    """
    newline = newline_of(split_lines(text))
    stubs = {name: stub_lines(locate(text, name), message_for[name], newline) for name in qualnames}
    return _replace(text, stubs)


def body_text(text: str, qualname: str) -> str:
    """Return the text of the body of ``qualname`` in ``text``, as `locate` delimits it."""
    body = locate(text, qualname)
    return "".join(split_lines(text)[body.start : body.stop])


def put_bodies(text: str, bodies: dict[str, str]) -> str:
    """Return ``text`` with the body of each qualname replaced by the text given for it."""
    return _replace(text, {name: split_lines(body) for name, body in bodies.items()})
