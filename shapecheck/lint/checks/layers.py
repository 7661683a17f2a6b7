"""Layers with weights constructed inside ``forward`` (SC119): new random weights on every call; a projection that
takes one head's features applied after the split into heads (SC182); one module object repeated in a layer stack
(SC184)."""

from __future__ import annotations

import ast

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint import polarity as pol
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import subtree, walk

# torch.nn layers that own trainable parameters
WEIGHTED = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "MultiheadAttention", "Transformer", "TransformerEncoderLayer",
    "TransformerDecoderLayer", "LSTM", "GRU", "RNN", "PReLU",
})
# torch.nn modules that hold no parameter, buffer or submodule (dropout, activations, losses): one object at every
# position of a stack shares nothing (deepchem's ``nn.ModuleList([dropout_layer for _ in range(n)])``); a test holds
# each to the installed torch
WEIGHTLESS = frozenset({
    "AlphaDropout", "BCELoss", "BCEWithLogitsLoss", "CELU", "CTCLoss", "CosineEmbeddingLoss", "CosineSimilarity",
    "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU", "FeatureAlphaDropout", "Flatten",
    "GELU", "GLU", "GaussianNLLLoss", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "HingeEmbeddingLoss",
    "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LeakyReLU", "LogSigmoid", "LogSoftmax", "MSELoss",
    "MarginRankingLoss", "Mish", "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss",
    "PairwiseDistance", "PoissonNLLLoss", "RReLU", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "SmoothL1Loss",
    "SoftMarginLoss", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink",
    "TripletMarginLoss", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d",
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


@on(ev.NamedCall, reports=("SC184",))
def module_repeated(scope: Scope, e: ev.NamedCall) -> None:
    """``nn.ModuleList([block] * n)``, ``nn.Sequential(*[Block(d)] * n)``, ``nn.ModuleList([block for _ in
    range(n)])``: a list repeats the object it holds, so every position is the same module (the stack of RePlay's
    SASRec before its fix). A comprehension that builds a module each time, or reads its variable, is a stack."""
    if e.name not in ("ModuleList", "Sequential") or _a_choice(scope, e.call):
        return
    for arg in e.call.args:
        held = _repeated(arg.value if isinstance(arg, ast.Starred) else arg)
        if held is not None and not _weightless(scope, held, e.call.lineno):
            text = ast.unparse(held)
            fresh = text if isinstance(held, ast.Call) else f"copy.deepcopy({text})"
            scope.report(msg.ModuleRepeated, arg, f"nn.{e.name}", text, fresh)


def _repeated(node: ast.expr) -> "ast.expr | None":
    """The one object a list repeats: ``[m] * n`` (or ``n * [m]``), or ``[m for _ in ...]`` with ``m`` a name or
    attribute the comprehension does not bind (a call builds a new object each time)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for one, count in ((node.left, node.right), (node.right, node.left)):
            if isinstance(one, ast.List) and len(one.elts) == 1 and not isinstance(count, ast.List) \
                    and not isinstance(one.elts[0], (ast.Constant, ast.Starred)):
                return one.elts[0]
    if isinstance(node, ast.ListComp) and isinstance(node.elt, (ast.Name, ast.Attribute)):
        bound = set(nm.bound_names(gen.target for gen in node.generators))
        if not any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(node.elt)):
            return node.elt
    return None


def _weightless(scope: Scope, held: ast.expr, line: int) -> bool:
    """``held`` is a torch.nn module that holds nothing to share, built where the function or ``__init__`` stores it:
    ``dropout = nn.Dropout(p)``, ``self.act = nn.GELU()``."""
    made: "ast.expr | None" = None
    if isinstance(held, ast.Name) and scope.func is not None:
        made = pol.last_store(scope, scope.func.node, held.id, line)
    elif nm.self_attr(held) is not None and scope.cls is not None:
        attr = held.attr  # type: ignore[attr-defined]
        made = None if attr in scope.cls.reassigned else scope.cls.attrs.get(attr)
    if not isinstance(made, ast.Call):
        return False
    dotted = nm.dotted(made.func) or ""
    return dotted.rpartition(".")[2] in WEIGHTLESS and dotted.rpartition(".")[0] in ("nn", "torch.nn")


def _a_choice(scope: Scope, call: ast.Call) -> bool:
    """``if config.share_head: self.heads = nn.ModuleList([shared] * n) else: self.heads = nn.ModuleList([...])``:
    the other branch of an ``if`` stores separate modules under the same name, so sharing is chosen."""
    if scope.func is None:
        return False
    for node in walk(scope.func.node):
        if isinstance(node, ast.If) and _returned_in(node.body, call) and any(
                isinstance(r, ast.Return) and r.value is not None and not _inside(r, node)
                for r in walk(scope.func.node)):
            return True  # ``if shared: return nn.ModuleList([m] * n)``, then a stack of fresh modules returned
        if not isinstance(node, ast.If) or not node.orelse:
            continue
        for here, there in ((node.body, node.orelse), (node.orelse, node.body)):
            targets = {ast.unparse(t) for stmt in here if isinstance(stmt, ast.Assign)
                       and any(sub is call for sub in ast.walk(stmt.value)) for t in stmt.targets}
            if targets and any(isinstance(stmt, ast.Assign) and {ast.unparse(t) for t in stmt.targets} & targets
                               for stmt in there):
                return True
    return False


def _returned_in(body: list[ast.stmt], call: ast.Call) -> bool:
    """A ``return`` among ``body``'s statements returns what holds ``call``."""
    return any(isinstance(stmt, ast.Return) and stmt.value is not None and _inside(call, stmt.value) for stmt in body)


def _inside(node: ast.AST, block: ast.AST) -> bool:
    return any(sub is node for sub in subtree(block))
