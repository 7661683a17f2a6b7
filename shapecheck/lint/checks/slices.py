"""A slice that stops at ``-n`` where ``n`` may be 0 (SC187): ``out[:, :, :-padded_length]`` to take off the padding
added to reach a multiple of a block keeps nothing at all when no padding was needed, since ``x[:-0]`` is
``x[:0]`` (daydreamlive/scope 2a1c0261: flex attention's output came back empty whenever the length was already a
multiple of 128).

``n`` may be 0 by its definitions in the function, each of them padding up to a multiple: a remainder
(``(-t) % block``) or a quantity taken from its own round-up (``ceil(t / 128) * 128 - t``); not when the slice runs only under a test of
``n`` (``if n > 0:``, ``... if n else ...``) or after one that leaves the function (``if n == 0: return x``).
"""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import ENDS, of_type, subtree
from shapecheck.lint.scope import Scope

_WRAPPERS = frozenset({"int", "round", "abs"})  # calls that keep a 0 a 0


@on(ev.FunctionDone, reports=("SC187",))
def slice_to_minus_zero(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    node = e.node
    cuts = [s for s in of_type(node, ast.Slice) if _cut(s) is not None]  # type: ignore[arg-type]
    if not cuts:
        return
    values = _definitions(node)
    for cut in cuts:
        name = _cut(cut)  # type: ignore[arg-type]
        found = values.get(name)  # type: ignore[arg-type]
        if not found or name in func.params or not all(v is not None and _may_be_zero(v) for v in found):
            continue
        if _guarded(node, cut, name, found):  # type: ignore[arg-type]
            continue
        scope.report(msg.SliceToMinusZero, cut.upper, name, ast.unparse(found[-1])[:60])  # type: ignore


def _cut(s: ast.Slice) -> Optional[str]:
    """``n`` for a slice that stops at ``-n``."""
    upper = s.upper
    if isinstance(upper, ast.UnaryOp) and isinstance(upper.op, ast.USub) and isinstance(upper.operand, ast.Name):
        return upper.operand.id
    return None


def _definitions(node: ast.AST) -> dict[str, list[Optional[ast.expr]]]:
    """Each name's values as the function stores them; None for a store whose value is not read here (a tuple
    target, an augmented assignment, a loop variable)."""
    found: dict[str, list[Optional[ast.expr]]] = {}
    for a in of_type(node, ast.Assign):
        for target in a.targets:  # type: ignore[attr-defined]
            if isinstance(target, ast.Name):
                found.setdefault(target.id, []).append(a.value)  # type: ignore[attr-defined]
            else:
                for n in subtree(target):
                    if isinstance(n, ast.Name):
                        found.setdefault(n.id, []).append(None)
    for kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr):
        for a in of_type(node, kind):
            for n in subtree(a.target):  # type: ignore[attr-defined]
                if isinstance(n, ast.Name):
                    found.setdefault(n.id, []).append(None)
    return found


def _may_be_zero(value: ast.expr) -> bool:
    """Padding up to a multiple: a remainder (``(-t) % block``, ``(block - t % block) % block``), or a quantity
    taken from its own round-up (``ceil(t / 128) * 128 - t``, ``(t + b - 1) // b * b - t``); both are 0 when ``t``
    is a multiple already. (A difference of two other quantities, ``target - current``, is left alone: what
    keeps it above 0 is not in the expression.)"""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _WRAPPERS \
            and len(value.args) == 1:
        return _may_be_zero(value.args[0])
    if not isinstance(value, ast.BinOp):
        return False
    if isinstance(value.op, ast.Mod):
        return not isinstance(value.left, ast.Constant) or not isinstance(value.left.value, str)  # not a format
    if isinstance(value.op, ast.Sub) and not isinstance(value.right, ast.Constant):
        taken = ast.dump(value.right)
        return any(ast.dump(n) == taken for n in subtree(value.left) if isinstance(n, type(value.right)))
    return False


def _reads(test: ast.AST, name: str, values: set[str]) -> bool:
    """The test reads the name, or computes one of its values (``if t % block != 0:`` above ``n = t % block``)."""
    return any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.BinOp) and ast.dump(n) in values
               for n in subtree(test))


def _guarded(node: ast.AST, cut: ast.Slice, name: str, found: list[Optional[ast.expr]]) -> bool:
    """The slice runs only where a test of ``name`` (or of its value) holds: inside an ``if``, ``while`` or ``a if c
    else b`` that tests it, or after an ``if`` on it that leaves the function, or an ``assert`` on it."""
    line, values = cut.lineno, {ast.dump(v) for v in found if v is not None}
    for kind in (ast.If, ast.While, ast.IfExp):
        for branch in of_type(node, kind):
            if not _reads(branch.test, name, values):  # type: ignore[attr-defined]
                continue
            if branch.lineno <= line <= (branch.end_lineno or branch.lineno):
                return True
            body = getattr(branch, "body", None)
            if isinstance(body, list) and body and isinstance(body[-1], ENDS) and (branch.end_lineno or 0) < line:
                return True
    return any(_reads(a.test, name, values) and a.lineno < line for a in of_type(node, ast.Assert))  # type: ignore
