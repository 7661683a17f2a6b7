"""Fused attention kernels and computed results: one tensor given to kernels of different layouts (SC126), a
query laid out for another kernel by data flow (SC172), a tensor operation whose result nobody keeps (SC127)."""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import kernels
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import walk
from shapecheck.lint.tracking import show

# The memory layout each fused kernel reads its queries in: (batch, heads, seq, d_head) or (batch, seq, heads, d_head).
HEADS_FIRST, SEQ_FIRST, LAYOUT = kernels.HEADS_FIRST, kernels.SEQ_FIRST, kernels.LAYOUT

# Tensor methods that return a new tensor and change nothing: an expression statement of one does nothing.
# (Names other objects use for methods with effects, such as a search tree's ``node.expand()``, are left out.)
_PURE = frozenset({"transpose", "permute", "reshape", "view", "contiguous", "softmax", "log_softmax", "unsqueeze",
                   "squeeze", "triu", "tril", "logical_not", "masked_select", "view_as", "reshape_as"})


def _kernel(call: ast.Call) -> Optional[str]:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    return name if name in LAYOUT else None


@on(ev.FusedAttention)
def fused_layout(scope: Scope, e: ev.FusedAttention) -> None:
    """The same query tensor given to kernels that read different layouts (flash-attn and SDPA on two paths of
    one function): one of the two calls reads heads as positions."""
    kernel = _kernel(e.call)
    func = scope.func
    if kernel is None or LAYOUT[kernel] != SEQ_FIRST or func is None or not e.call.args \
            or not isinstance(e.call.args[0], ast.Name):
        return
    query = e.call.args[0].id
    if query in func.assigned:
        return  # reassigned (``q = q.transpose(1, 2)``): each path may lay it out for its own kernel
    for other in walk(func.node):
        if isinstance(other, ast.Call) and other is not e.call and _kernel(other) is not None \
                and LAYOUT[_kernel(other)] != LAYOUT[kernel] and other.args \
                and isinstance(other.args[0], ast.Name) and other.args[0].id == query:  # type: ignore[index]
            scope.report(msg.FusedLayout, e.call, kernel, query, LAYOUT[kernel], _kernel(other), LAYOUT[_kernel(other)])  # type: ignore[index]
            return


@on(ev.FusedAttention)
def kernel_layout(scope: Scope, e: ev.FusedAttention) -> None:
    """A query whose axes are known by where they come from (``x.view(b, t, h, d)``, then a transpose or not)
    laid out for the other family of kernels: SDPA given (batch, seq, heads, d_head), flash-attn or xformers
    given (batch, heads, seq, d_head). The kernel then attends over the heads (or mixes the positions' heads)."""
    kernel, q = _kernel(e.call), e.query
    if kernel is None or q is None or q.axes is None or len(q.axes) != 4 or not e.call.args:
        return
    heads = [i for i, axis in enumerate(q.axes) if axis is not None and axis.atoms == ("heads",)]
    reads_heads_at = 1 if LAYOUT[kernel] == HEADS_FIRST else 2
    if heads == [3 - reads_heads_at]:  # the head count stands where the kernel reads the positions
        shown = ast.unparse(e.call.args[0])[:40]
        scope.report(msg.KernelLayout, e.call.args[0], kernel, LAYOUT[kernel], shown, show(q.axes))


@on(ev.Discarded, reports=("SC127",))
def result_discarded(scope: Scope, e: ev.Discarded) -> None:
    """``q.transpose(1, 2).reshape(b, s, -1)`` as a statement: the new tensor is dropped, ``q`` is unchanged.
    A call given ``out=`` writes its result there (``torch.triu(mask, out=mask)``): nothing is dropped."""
    call = e.call
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in _PURE \
            or any(k.arg == "out" for k in call.keywords):
        return
    receiver = call.func.value
    namespace = nm.is_namespace(receiver)
    source = call.args[0] if namespace and call.args else receiver
    root = source
    while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(root, ast.Name) and (root.id not in ("self", "cls") or nm.self_attr(source) is not None) \
            and not (namespace and not call.args):
        scope.report(msg.ResultDiscarded, call, ast.unparse(call)[:60], ast.unparse(source)[:40])
