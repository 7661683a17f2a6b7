"""A module's state kept consistent: attributes ``__init__`` takes together from one call's results, rebuilt
elsewhere by the same call with some of the results thrown away, so those attributes keep stale values (SC169)."""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import blocks, walk
from shapecheck.lint.scope import Scope

# (the callee's text, the number of results) -> (the attribute at each position, the line in __init__)
Joint = dict[tuple[str, int], tuple[tuple[Optional[str], ...], int]]


@on(ev.FunctionDone)
def stale_companion(scope: Scope, e: ev.FunctionDone) -> None:
    """``self.rope, self.cos, self.sin = tables(n)`` in ``__init__``, then ``self.rope, _, _ = tables(2 * n)``
    elsewhere: the new cos and sin are computed and dropped, and the old ones no longer match the table."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following or func.method_of is None \
            or func.node.name == "__init__":
        return
    init = func.method_of.methods.get("__init__")
    joint = _joint(scope, init) if init is not None else {}
    if not joint:
        return
    for block in blocks(func.node):
        assigned = {a for stmt in block if isinstance(stmt, ast.Assign) for a in _self_targets(stmt)}
        for stmt in block:
            found = _rebuilt(stmt, joint)
            if found is None:
                continue
            attrs, (made, line) = found
            kept = [a for a in attrs if a is not None]
            dropped = [m for m, a in zip(made, attrs) if m is not None and a != m and m not in assigned]
            if kept and dropped:
                scope.report(msg.StaleCompanion, stmt, kept[0], ", ".join(f"self.{d}" for d in dropped), line)


def _joint(scope: Scope, init: ast.AST) -> Joint:
    """The tuples of attributes ``__init__`` takes from one call's results, computed once per class."""
    key = f"joint_attributes:{id(init)}"
    if key not in scope.memo:
        found: Joint = {}
        for stmt in walk(init):
            shape = _call_tuple(stmt) if isinstance(stmt, ast.Assign) else None
            if shape is not None and sum(a is not None for a in shape[1]) > 1:
                found.setdefault((shape[0], len(shape[1])), (shape[1], stmt.lineno))  # type: ignore[attr-defined]
        scope.memo[key] = found
    return scope.memo[key]  # type: ignore[return-value]


def _rebuilt(stmt: ast.stmt, joint: Joint) -> Optional[tuple[tuple[Optional[str], ...], tuple]]:
    """The same call's results taken again: (the attribute at each position now, what ``__init__`` took)."""
    shape = _call_tuple(stmt) if isinstance(stmt, ast.Assign) else None
    if shape is None or (shape[0], len(shape[1])) not in joint:
        return None
    return shape[1], joint[(shape[0], len(shape[1]))]


def _call_tuple(stmt: ast.Assign) -> Optional[tuple[str, tuple[Optional[str], ...]]]:
    """``a, self.b, _ = f(...)`` -> ("f", (None, "b", None)): the callee and the attribute at each position."""
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Tuple) or not isinstance(stmt.value, ast.Call):
        return None
    return ast.unparse(stmt.value.func), tuple(nm.self_attr(t) for t in stmt.targets[0].elts)


def _self_targets(stmt: ast.Assign) -> list[str]:
    attrs: list[str] = []
    for target in stmt.targets:
        parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        attrs += [a for a in (nm.self_attr(p) for p in parts) if a is not None]
    return attrs

