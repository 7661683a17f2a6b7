"""Layers with weights constructed inside ``forward`` (SC119): new random weights on every call; a projection that
takes one head's features applied after the split into heads (SC182)."""

from __future__ import annotations

import ast

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import polarity as pol
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import walk

# torch.nn layers that own trainable parameters
WEIGHTED = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "MultiheadAttention", "Transformer", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "LSTM", "GRU", "RNN", "PReLU",
})


@on(ev.Construct)
def layer_in_forward(scope: Scope, e: ev.Construct) -> None:
    """Only a layer that is applied and dropped: one kept on ``self`` (lazy set-up, resizing) is fine."""
    func = scope.func
    if e.layer not in WEIGHTED or scope.in_module_method() != "forward" or func is None:
        return
    if _applied_and_dropped(func.node, e.call):
        scope.report(msg.LayerInForward, e.call, f"nn.{e.layer}", "forward")


def _applied_and_dropped(func: ast.AST, made: ast.Call) -> bool:
    local = None
    for node in walk(func):
        if isinstance(node, ast.Call) and node.func is made:
            return True  # nn.Linear(a, b)(x)
        if isinstance(node, ast.Assign) and node.value is made and len(node.targets) == 1:
            local = node.targets[0].id if isinstance(node.targets[0], ast.Name) else None
    if local is None:
        return False
    called = kept = False
    for node in walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == local:
            called = True
        if isinstance(node, (ast.Assign, ast.Return)) and any(
                isinstance(n, ast.Name) and n.id == local for n in ast.walk(node.value or ast.Pass())
        ) and node.value is not made:
            kept = True  # stored somewhere (self.x = layer) or returned
    return called and not kept


@on(ev.ProjectedPerHead)
def projected_per_head(scope: Scope, e: ev.ProjectedPerHead) -> None:
    """Only where the heads were split from the function's input as given: a tensor projected to the width first
    and then split (Transolver's slice tokens, per head by design) is no sign of a skipped projection."""
    if e.call.args and _split_input(scope, e.call.args[0], 0):
        scope.report(msg.ProjectedPerHead, e.call, e.attr, ast.unparse(e.made))


_SPLITS = frozenset({"view", "reshape", "unflatten", "contiguous", "transpose", "permute"})


def _split_input(scope: Scope, node: ast.expr, depth: int) -> bool:
    """``x.view(b, n, heads, d)`` of a parameter as the caller gave it, followed through the plain assignments
    that reach the call (``values = values.reshape(...)``): the input itself, cut into heads."""
    func = scope.func
    if func is None or depth > 3:
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SPLITS:
        node = node.func.value
    if not isinstance(node, ast.Name):
        return False
    stored = pol.last_store(scope, func.node, node.id, node.lineno)
    if stored is None:
        return node.id in func.params and not any(  # the parameter itself: nothing stored under it before
            isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == node.id and n.lineno < node.lineno
            for n in walk(func.node))
    return _split_input(scope, stored, depth + 1)
