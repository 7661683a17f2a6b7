"""Every node under a function, class or module, listed once per file: the checks ask about the same function's
nodes again and again, and reading a list is far cheaper than ``ast.walk`` going down the tree each time."""

from __future__ import annotations

import ast
from typing import Iterable, Iterator, Sequence

_WHOLE = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_LISTED: dict[int, tuple[ast.AST, tuple[ast.AST, ...]]] = {}  # id(node) -> (node, its nodes in ast.walk order)
_BY_TYPE: dict[int, tuple[ast.AST, dict[type, list[ast.AST]]]] = {}  # id(node) -> (node, node type -> its nodes)


def walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk(node)``, in the same order; for a function, class or module the list is made once, and leaves
    out the ``Load``/``Store``/``Del`` markers (no check asks for them: they read ``node.ctx``)."""
    if not isinstance(node, _WHOLE):
        return ast.walk(node)
    hit = _LISTED.get(id(node))
    if hit is None or hit[0] is not node:
        hit = _LISTED[id(node)] = (node, _breadth_first(node))
    return hit[1]


def subtree(node: ast.AST) -> Iterable[ast.AST]:
    """``walk(node)`` with the markers left out for any node: a small subtree (an expression, a statement) is
    listed afresh, far faster than by ``ast.walk``'s generators."""
    return walk(node) if isinstance(node, _WHOLE) else _breadth_first(node)


def every(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes ``walk(node)`` gives, in no set order, read from the lists of the functions and classes inside:
    for a question any order answers (``any``, a set), a class costs no list of its own beside its methods'."""
    yield node
    for child in children(node):
        yield from walk(child) if isinstance(child, _WHOLE) else subtree(child)


def children(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.iter_child_nodes(node)`` without the markers, reading only the fields that can hold nodes."""
    for field, many in _layout_of(type(node)):
        value = getattr(node, field, None)
        if many:
            yield from (v for v in value if isinstance(v, ast.AST))
        elif value is not None and type(value) is not list:
            yield value


def of_type(node: ast.AST, kind: type) -> Sequence[ast.AST]:
    """The nodes of type ``kind`` under ``node`` (itself included), in ``walk``'s order; for a function, class or
    module sorted by type once, so that a check asking for its assignments reads only those."""
    if not isinstance(node, _WHOLE):
        return [n for n in _breadth_first(node) if type(n) is kind]
    hit = _BY_TYPE.get(id(node))
    if hit is None or hit[0] is not node:
        index: dict[type, list[ast.AST]] = {}
        for n in walk(node):
            index.setdefault(type(n), []).append(n)
        hit = _BY_TYPE[id(node)] = (node, index)
    return hit[1].get(kind, ())


def _breadth_first(root: ast.AST) -> tuple[ast.AST, ...]:
    """The nodes under ``root`` in ``ast.walk``'s order, markers left out; reads only the fields of each node type
    that can hold nodes, knowing which hold a list, which is far faster than ``ast.walk``'s generators over every
    field."""
    found = [root]
    append, extend = found.append, found.extend
    for node in found:  # a list read while it grows: breadth first
        for field, many in _layout_of(type(node)):
            value = getattr(node, field, None)
            if many:
                extend([v for v in value if isinstance(v, ast.AST)])  # ``Dict.keys`` holds None for ``**m``
            elif value is not None and type(value) is not list:
                append(value)
    return tuple(found)


# fields that never hold a node: names, flags, literals (and ``ctx``, whose markers are left out)
_LEAF_FIELDS = frozenset({"id", "ctx", "attr", "name", "arg", "asname", "module", "level", "kind", "type_comment",
                          "conversion", "simple", "is_async", "rest", "kwd_attrs", "tag", "lineno"})
_LITERAL_VALUE = (ast.Constant, ast.MatchSingleton)  # their ``value`` is a Python constant, never a node
# fields that hold a list of nodes wherever they appear, but for the node types listed beside them
_LIST_FIELDS = frozenset({"args", "bases", "body", "cases", "comparators", "decorator_list", "defaults", "elts",
                          "finalbody", "generators", "handlers", "ifs", "items", "keys", "keywords", "kw_defaults",
                          "kwd_patterns", "kwonlyargs", "names", "ops", "orelse", "patterns", "posonlyargs",
                          "targets", "type_ignores", "values", "type_params"})
_ONE_NODE = {"args": (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda), "body": (ast.IfExp, ast.Lambda),
             "orelse": (ast.IfExp,)}
_CHILD_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}  # node type -> (field that can hold nodes, a list?)


def _layout_of(kind: type) -> tuple[tuple[str, bool], ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(
            (f, f in _LIST_FIELDS and not issubclass(kind, _ONE_NODE.get(f, ()))) for f in _child_fields(kind))
    return fields


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = getattr(kind, "_fields", ())
    return tuple(f for f in fields if f not in _LEAF_FIELDS and not (f == "value" and issubclass(kind, _LITERAL_VALUE)))


def other_branch(branching: ast.If, node: ast.AST) -> list[ast.stmt]:
    """The statements of ``branching`` on the side that does not hold ``node`` (its ``else`` when the body holds
    it, its body otherwise)."""
    inside = any(sub is node for stmt in branching.body for sub in subtree(stmt))
    return branching.orelse if inside else branching.body


def blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list under ``node`` (bodies, ``else`` and ``finally`` parts), from its node list."""
    for sub in walk(node):
        if isinstance(sub, ast.expr):
            continue  # an expression holds no statements (a lambda's or an ``x if c else y``'s body is one)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(sub, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def statement_blocks(stmt: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists directly inside a statement: its body, ``else`` and ``finally`` parts, each ``except``'s
    body and each ``case``'s."""
    found = [b for b in (getattr(stmt, f, None) for f in ("body", "orelse", "finalbody")) if isinstance(b, list)]
    return found + [h.body for h in getattr(stmt, "handlers", ())] + [c.body for c in getattr(stmt, "cases", ())]


ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)  # a statement after one of these in its list never runs


def unreachable_spans(tree: ast.AST) -> list[tuple[int, int]]:
    """(first line, last line) of each run of statements that follows a ``return``, ``raise``, ``continue`` or
    ``break`` in the same statement list: code no path reaches, sorted."""
    spans, blocks = [], [tree.body] if isinstance(getattr(tree, "body", None), list) else []
    while blocks:
        block = blocks.pop()
        for index, stmt in enumerate(block):
            blocks += statement_blocks(stmt)
            if isinstance(stmt, ENDS) and index + 1 < len(block):
                spans.append((block[index + 1].lineno, block[-1].end_lineno or block[-1].lineno))
                break  # what follows is listed whole; nothing under it is reached either
    return sorted(spans)


def forget() -> None:
    """Drop the lists (a file is done)."""
    _LISTED.clear()
    _BY_TYPE.clear()
