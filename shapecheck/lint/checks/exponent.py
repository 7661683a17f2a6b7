"""A softmax written out, ``exp(s)`` divided by its sum, with no maximum taken off ``s`` first (SC189): ``exp``
overflows to inf once a score passes 88 in float32 and 11 in float16, and inf / inf is NaN. ``softmax`` subtracts the
row maximum for this reason (ComfyUI 1a4edd19: the in-place fallback softmax of sub-quadratic attention).

Decided from the function alone: the exponentials of one tensor (``torch.exp(s)``, ``s.exp()``, in place with
``out=s`` or ``exp_()``) divided by a sum of themselves (``e / e.sum(-1, keepdim=True)``, ``s /= summed`` with
``summed = torch.sum(s, ...)``), where ``s`` is a name that nothing in the function shifts or bounds before (a
subtraction, ``clamp``, a log-softmax): its values are what the caller gave, or a product of tensors.
"""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import of_type, subtree
from shapecheck.lint.scope import Scope

_SUMS = frozenset({"sum", "nansum"})
_ARRAY_MODULES = frozenset({"np", "numpy", "math", "jnp", "torch.special"})  # ``np.exp(s)``: a function of s
_BOUNDING = frozenset({"clamp", "clamp_", "clip", "clip_", "log_softmax", "logsigmoid", "tanh", "sigmoid", "sub",
                       "sub_", "normalize", "cos", "sin"})  # what leaves the scores bounded, or shifted


@on(ev.FunctionDone, reports=("SC189",))
def exp_without_max(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    node = e.node
    exps = [(c, s) for c in of_type(node, ast.Call) for s in [_exp_of(c)] if s is not None]  # type: ignore[arg-type]
    if not exps:
        return
    for call, source in exps:
        held = _holder(node, call, source)
        if held is None or not _normalised(node, held, call.lineno):
            continue
        if _shifted_before(node, source, call.lineno):
            continue
        scope.report(msg.ExpWithoutMax, call, source, held)


def _exp_of(call: ast.Call) -> Optional[str]:
    """``s`` for ``torch.exp(s)``, ``s.exp()``, ``s.exp_()``, ``torch.exp(s, out=s)``: the name exponentiated."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("exp", "exp_"):
        return None
    if nm.is_namespace(func.value) or nm.dotted(func.value) in _ARRAY_MODULES:
        target = call.args[0] if call.args else None
    else:
        target = func.value
    return target.id if isinstance(target, ast.Name) else None


def _holder(node: ast.AST, call: ast.Call, source: str) -> Optional[str]:
    """The name that holds the exponentials: the source itself for an in-place call, else the plain name the call
    is stored under."""
    if isinstance(call.func, ast.Attribute) and call.func.attr == "exp_":
        return source
    out = nm.keyword(call, "out")
    if isinstance(out, ast.Name):
        return out.id
    for a in of_type(node, ast.Assign):
        if a.value is call and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):  # type: ignore
            return a.targets[0].id  # type: ignore[attr-defined]
    return None


def _sum_of(expr: ast.expr, name: str, sums: set[str]) -> bool:
    """``name.sum(...)``, ``torch.sum(name, ...)``, or a name stored from one of them."""
    if isinstance(expr, ast.Name):
        return expr.id in sums
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute) or expr.func.attr not in _SUMS:
        return False
    module = nm.is_namespace(expr.func.value) or nm.dotted(expr.func.value) in _ARRAY_MODULES
    summed = expr.args[0] if module and expr.args else expr.func.value
    return isinstance(summed, ast.Name) and summed.id == name


def _normalised(node: ast.AST, name: str, line: int) -> bool:
    """After ``line``, the exponentials divided by a sum of themselves."""
    sums = {a.targets[0].id for a in of_type(node, ast.Assign)  # type: ignore[attr-defined]
            if len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)  # type: ignore[attr-defined]
            and _sum_of(a.value, name, set())}  # type: ignore[attr-defined]
    for d in of_type(node, ast.BinOp):
        if isinstance(d.op, ast.Div) and d.lineno >= line and isinstance(d.left, ast.Name) \
                and d.left.id == name and _sum_of(d.right, name, sums):  # type: ignore[attr-defined]
            return True
    for d in of_type(node, ast.AugAssign):
        if isinstance(d.op, ast.Div) and d.lineno >= line and isinstance(d.target, ast.Name) \
                and d.target.id == name and _sum_of(d.value, name, sums):  # type: ignore[attr-defined]
            return True
    return False


def _shifted_before(node: ast.AST, source: str, line: int) -> bool:
    """Something in the function before the exponent shifts or bounds ``source``: ``s -= m``, ``s = s - m``,
    ``s = s.clamp(...)``, ``s.sub_(m)``."""
    for a in of_type(node, ast.AugAssign):
        if isinstance(a.target, ast.Name) and a.target.id == source and a.lineno < line:  # type: ignore
            return True
    for a in of_type(node, ast.Assign):
        if a.lineno >= line or not any(isinstance(t, ast.Name) and t.id == source for t in a.targets):  # type: ignore
            continue
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) or isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr in _BOUNDING
               for n in subtree(a.value)):  # type: ignore[attr-defined]
            return True
    return any(isinstance(c.func, ast.Attribute) and c.func.attr in _BOUNDING and isinstance(c.func.value, ast.Name)
               and c.func.value.id == source and c.lineno < line for c in of_type(node, ast.Call))  # type: ignore
