"""Every node under a function, class or module, listed once per file: the checks ask about the same function's
nodes again and again, and reading a list is far cheaper than ``ast.walk`` going down the tree each time."""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

_WHOLE = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_LISTED: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}  # id(node) -> (node, its nodes in ast.walk order)


def walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk(node)``, in the same order; for a function, class or module the list is made once, and leaves
    out the ``Load``/``Store``/``Del`` markers (no check asks for them: they read ``node.ctx``)."""
    if not isinstance(node, _WHOLE):
        return ast.walk(node)
    hit = _LISTED.get(id(node))
    if hit is None or hit[0] is not node:
        hit = _LISTED[id(node)] = (node, _breadth_first(node))
    return hit[1]


def _breadth_first(root: ast.AST) -> tuple[ast.AST, ...]:
    """The nodes under ``root`` in ``ast.walk``'s order, markers left out; reads each node's fields directly,
    which is faster than ``ast.walk``'s generators."""
    found = [root]
    i = 0
    while i < len(found):
        node = found[i]
        i += 1
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                if not isinstance(value, ast.expr_context):
                    found.append(value)
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, ast.AST))
    return tuple(found)


def blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list under ``node`` (bodies, ``else`` and ``finally`` parts), from its node list."""
    for sub in walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def forget() -> None:
    """Drop the lists (a file is done)."""
    _LISTED.clear()
