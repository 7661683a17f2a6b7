"""Masks of 0 and 1 used as numbers (``shapecheck.lint.mask_kinds`` says what a mask's entries hold): a large
negative written into a boolean tensor, which stores it as True (SC175); a 0/1 mask added to the scores or given to a
fused kernel as a float bias, which shifts them by 1 instead of masking (SC176); ``1 - m`` of a boolean mask, which
torch refuses (SC177)."""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import kernels
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.mask_kinds import BOOL, FILLS, ONES, ZERO_ONE, kind, number, own_fill, stored
from shapecheck.lint.nodes import of_type, subtree
from shapecheck.lint.scope import Scope

# fused kernels that add a float mask to the scores: (name ends with, keyword, position)
_BIASED = tuple((name, keyword, position) for name, (keyword, position) in kernels.MASKED.items())


@on(ev.FunctionDone)
def binary_masks(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following or nm.compiled_elsewhere(func.node) \
            or not _torch_module(scope):
        return  # what booleans do as numbers is PyTorch's rule: JAX, NumPy and Triton promote them
    for call in of_type(func.node, ast.Call):
        _fill(scope, call)  # type: ignore[arg-type]
        _kernel(scope, call)  # type: ignore[arg-type]
    for assign in of_type(func.node, ast.Assign):
        _item_store(scope, assign)  # type: ignore[arg-type]
    products = any(_product(n) for n in of_type(func.node, ast.BinOp)) \
        or any(_product(n) for n in of_type(func.node, ast.Call))  # no product of tensors, no scores to add to
    for node in of_type(func.node, ast.AugAssign) if products else ():
        if isinstance(node.op, ast.Add):  # type: ignore[attr-defined]
            _added(scope, node, node.target, node.value)  # type: ignore[attr-defined]
    for node in of_type(func.node, ast.BinOp):
        if isinstance(node.op, ast.Add) and products:  # type: ignore[attr-defined]
            _added(scope, node, node.left, node.right)  # type: ignore[attr-defined]
        elif isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) \
                and node.left.value == 1 and kind(scope, node.right) == BOOL:  # type: ignore[attr-defined]
            scope.report(msg.BoolMaskSubtracted, node, ast.unparse(node.right)[:40])  # type: ignore[attr-defined]


def _torch_module(scope: Scope) -> bool:
    if "imports_torch" not in scope.memo:
        scope.memo["imports_torch"] = nm.imports_torch(scope.tree)
    return bool(scope.memo["imports_torch"])


def _non_bool(scope: Scope, value: Optional[ast.expr]) -> Optional[float]:
    """The number a fill writes (spelled there, or stored once in a local) when it is neither 0 nor 1 (which a
    boolean holds as False and True)."""
    found = number(stored(scope, value))
    return found if found is not None and found not in (0.0, 1.0) else None


def _fill(scope: Scope, call: ast.Call) -> None:
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in FILLS):
        return
    value = nm.argument(call, 1, "value")
    if _non_bool(scope, value) is None:
        return
    receiver = call.func.value
    if own_fill(call) or kind(scope, receiver) == BOOL:
        scope.report(msg.BoolMaskFilled, call, f"{call.func.attr}(..., {ast.unparse(value)})",  # type: ignore[arg-type]
                     ast.unparse(receiver)[:40])


def _item_store(scope: Scope, assign: ast.Assign) -> None:
    target = assign.targets[0] if len(assign.targets) == 1 else None
    if isinstance(target, ast.Subscript) and _non_bool(scope, assign.value) is not None \
            and kind(scope, target.value) == BOOL:
        scope.report(msg.BoolMaskFilled, assign, f"an item store of {ast.unparse(assign.value)}",
                     ast.unparse(target.value)[:40])


def _added(scope: Scope, node: ast.AST, left: ast.expr, right: ast.expr) -> None:
    if isinstance(left, ast.Constant) or isinstance(right, ast.Constant):
        return  # ``x + 1``: no mask
    for mask, other in ((right, left), (left, right)):
        if not _scores(scope, other):
            continue  # asked first: sums of scores are few, and a mask's kind takes a walk back through its stores
        found = kind(scope, mask)
        if found in ZERO_ONE:
            scope.report(msg.BinaryMaskAdded, node, ast.unparse(mask)[:40], _WHAT[found], "added to the scores")
            return


_WHAT = {BOOL: "booleans", ONES: "0 and 1", "binary": "0 and 1"}


def _kernel(scope: Scope, call: ast.Call) -> None:
    func = call.func
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    for suffix, keyword, position in _BIASED:
        if last.endswith(suffix):
            mask = nm.argument(call, position, keyword)
            if mask is not None and kind(scope, mask) == ONES:
                scope.report(msg.BinaryMaskAdded, mask, ast.unparse(mask)[:40], _WHAT[ONES],
                             f"given to {last} as a float {keyword}, which it adds to the scores")


def _scores(scope: Scope, node: ast.expr) -> bool:
    """Attention scores: a product of tensors (``@``, matmul, bmm, einsum), or a name some store of which is one
    (or comes from one, three stores back), in this function."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id in _score_names(scope)
    return any(_product(n) for n in subtree(node))


def _score_names(scope: Scope) -> frozenset[str]:
    key = f"score_names:{id(scope.func.node)}"  # type: ignore[union-attr]
    if key not in scope.memo:
        found: set[str] = set()
        reads: list[tuple[str, set[str]]] = []
        for assign in of_type(scope.func.node, ast.Assign):  # type: ignore[union-attr]
            nodes = subtree(assign.value)  # type: ignore[attr-defined]
            names = [t.id for t in assign.targets if isinstance(t, ast.Name)]  # type: ignore[attr-defined]
            if any(_product(n) for n in nodes):
                found.update(names)
            else:
                read = {n.id for n in nodes if type(n) is ast.Name}
                reads += [(name, read) for name in names]
        for _ in range(3):  # ``scores = scores * scale``, ``attn = scores + bias``: what comes of them
            found |= {name for name, read in reads if read & found}
        scope.memo[key] = frozenset(found)
    return scope.memo[key]  # type: ignore[return-value]


def _product(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return True
    return isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] in nm.PRODUCTS | {"baddbmm"}
