"""A tensor combined with what is left of it after an axis other than the first was taken away (SC188):
``position_ids[:, -1] - position_ids``, ``x / x.norm(dim=1)``, ``s - s.max(dim=1)[0]``. Broadcasting lines the
shapes up from the right, so the shorter operand's axes meet the wrong ones: ``(batch,)`` against ``(batch, seq)``
meets ``seq``, and the result is wrong, or an error, for every batch but 1 (bojone/rerope acfe7884). The fix keeps
the axis: ``[:, -1:]``, ``keepdim=True``.

Decided from the expression alone: an index by a constant after full slices (``x[:, 0]``, ``x[:, :, -1]``), or a
reduction over a positive axis (``dim=1``) without ``keepdim``, of the very tensor on the other side. A negative
axis counts only where lint knows the tensor has two axes or more (``x[..., 0]`` of a vector is a number, and
``v - v.mean(-1)`` centres it).
"""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import of_type
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import Tensor

# reductions that drop their axis unless told to keep it (``max``/``min`` with a dim give (values, indices))
_REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "logsumexp", "norm", "std", "var", "prod", "max", "min",
                         "median", "nansum", "nanmean", "count_nonzero", "all", "any"})
_PAIRED = frozenset({"max", "min", "median"})  # these give (values, indices) when given a dim
_ELEMENTWISE = (ast.Add, ast.Sub, ast.Mult, ast.Div)


@on(ev.FunctionDone, reports=("SC188",))
def combined_with_itself_reduced(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    for node in of_type(e.node, ast.BinOp):
        if isinstance(node.op, _ELEMENTWISE):  # type: ignore[attr-defined]
            _pair(scope, node, node.left, node.right)  # type: ignore[attr-defined]
    for node in of_type(e.node, ast.Compare):
        if len(node.comparators) == 1:  # type: ignore[attr-defined]
            _pair(scope, node, node.left, node.comparators[0])  # type: ignore[attr-defined]


def _pair(scope: Scope, node: ast.AST, left: ast.expr, right: ast.expr) -> None:
    for whole, part in ((left, right), (right, left)):
        if not isinstance(whole, (ast.Name, ast.Attribute)):
            continue
        found = _dropped(scope, part)
        if found is not None and ast.dump(found[0]) == ast.dump(whole):
            scope.report(msg.CombinedWithItselfReduced, part, ast.unparse(part), ast.unparse(whole), found[1],
                         found[2])
            return


def _dropped(scope: Scope, expr: ast.expr) -> Optional[tuple[ast.expr, int, str]]:
    """(the tensor, the axis taken away, how to keep it) for ``t[:, k]`` or a reduction of ``t`` over an axis other
    than the first without ``keepdim``."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Tuple):
        items = expr.slice.elts
        for k, item in enumerate(items):
            if _full(item):
                continue
            if k >= 1 and nm.int_value(item) is not None and all(_full(i) for i in items[k + 1:]):
                return expr.value, k, f"index with a slice ({ast.unparse(item)}:{_next(item)})"
            return None
        return None
    paired = False
    if isinstance(expr, ast.Subscript) and nm.int_value(expr.slice) == 0:
        expr, paired = expr.value, True  # ``t.max(dim=1)[0]``
    elif isinstance(expr, ast.Attribute) and expr.attr == "values":
        expr, paired = expr.value, True
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute):
        return None
    name = expr.func.attr
    if name not in _REDUCTIONS or (name in _PAIRED) != paired:
        return None
    source = expr.func.value
    if nm.is_namespace(source):  # ``torch.sum(t, dim=1)``
        if not expr.args:
            return None
        source, rest = expr.args[0], expr.args[1:]
    else:
        rest = expr.args
    keep = nm.keyword(expr, "keepdim") or nm.keyword(expr, "keepdims")  # torch takes NumPy's spelling too
    if keep is not None and not (isinstance(keep, ast.Constant) and keep.value is False):
        return None
    at = 1 if name == "norm" else 0  # ``t.norm(p, dim)``: the order first
    if len(rest) > at + 1:
        return None  # a positional keepdim
    dim = nm.keyword(expr, "dim") or nm.keyword(expr, "axis") or (rest[at] if len(rest) > at else None)
    axis = nm.int_value(dim) if dim is not None else None
    if axis is None or axis == 0:
        return None
    if axis < 0:
        t = scope.values.get(id(source))
        rank = len(t.axes) if isinstance(t, Tensor) and t.axes is not None else 0
        if rank < 2 or axis + rank == 0:
            return None  # a vector reduced to a number, or the first axis: both line up
    return source, axis, "keepdim=True"


def _full(item: ast.expr) -> bool:
    return isinstance(item, ast.Slice) and item.lower is None and item.upper is None and item.step is None


def _next(item: ast.expr) -> str:
    value = nm.int_value(item)
    return "" if value == -1 else str((value or 0) + 1)
