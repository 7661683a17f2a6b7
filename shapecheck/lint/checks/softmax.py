"""Softmax over the keys (SC101), scaling of the scores (SC102, SC103, SC122, SC123, SC124), scaling after the softmax
(SC116)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.evaluate import QUARTER
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import ONE, Tensor, show
from shapecheck.lint.nodes import blocks, walk


@on(ev.Softmax)
def softmax_axis(scope: Scope, e: ev.Softmax) -> None:
    t = e.tensor
    if t.role != "scores" or t.key_pos is None:
        return
    rank, key = t.rank, t.key_pos
    got, said = _normalised_dim(e, rank)
    if got is None:
        return
    if rank is None:
        below_last = got >= 0 and t.min_rank is not None and got < t.min_rank - 1  # the rank is at least min_rank
        if (got < 0 and got != key or below_last) and not _dual_softmax(scope, e):
            scope.report(msg.SoftmaxAxis, e.call, said, "Q·Kᵀ", "dim=-1")
        return
    if not -rank <= got < rank or got % rank == key or _dual_softmax(scope, e):
        return
    axes = t.axes or ()
    named, key_name = axes[got % rank], axes[key]
    if key_name == ONE:  # one key: a softmax over it is 1 everywhere, so the product is keys against one query
        return  # (``keys @ query.transpose(1, 2)``, [heads, keys, 1]) and its other axis holds the keys
    scope.report(msg.SoftmaxAxis, e.call, f"{said} ({named.text if named else '?'})", f"[{show(axes)}]",
                 f"dim={key - rank} (the keys, {key_name.text if key_name else 'seq_k'})")


@on(ev.Softmax, reports=("SC185",))
def softmax_over_one(scope: Scope, e: ev.Softmax) -> None:
    axes = e.tensor.axes
    if not axes:
        return
    rank = len(axes)
    got, said = _normalised_dim(e, rank)
    if got is None or not -rank <= got < rank or axes[got % rank] != ONE:
        return
    scope.report(msg.SoftmaxOverOne, e.call, said, show(axes))


def _normalised_dim(e: ev.Softmax, rank: Optional[int]) -> tuple[Optional[int], str]:
    """The dim a softmax normalises over and how to say it: the one written, or torch's implicit choice for a
    softmax given none (dim 0 for 0-, 1- and 3-D input, else 1; unknown without the rank)."""
    if e.has_dim:
        got = nm.int_value(e.dim) if e.dim is not None else None
        return got, f"dim={got}"
    if rank is None:
        return None, ""
    got = 0 if rank in (0, 1, 3) else 1
    return got, f"the implicit dim={got}"


def _callee(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _dual_softmax(scope: Scope, e: ev.Softmax) -> bool:
    """Matching code normalises a similarity over both axes on purpose (``softmax(s, 1) * softmax(s, 2)``)."""
    if e.source is None or scope.func is None:
        return False
    root = _scores_root(e.source)
    block = _block_of(scope.func.node, e.call)  # the same scores: a softmax in the same statement list (a name
    # reused for other scores on another branch is not the same similarity)
    others = [c for stmt in block for c in ast.walk(stmt) if isinstance(c, ast.Call) and c is not e.call
              and _callee(c.func) in nm.SOFTMAX | {"Softmax"} and root is not None
              and root in {_scores_root(a) for a in _normalised(c)}  # the same scores, maybe transposed
              and not any(sub is e.call for sub in ast.walk(c))]  # not the ``.to(dtype)`` around this one
    return bool(others) or _chosen_by_a_flag(scope.func.node, e.call, root) or _renormalised(scope.func.node, e.call)


def _scores_root(node: ast.expr) -> Optional[str]:
    """The name the scores a softmax reads start from: ``s``, ``s.transpose(1, 2)``, or the first argument of a plain
    function that takes them (``mask_logits(s, mask)``)."""
    root = nm.chain_root(node)
    if root is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        root = nm.chain_root(node.args[0])
    return root


def _renormalised(func: ast.AST, call: ast.Call) -> bool:
    """``attn = s.softmax(dim=1); attn = attn / attn.sum(dim=-1, keepdim=True)`` (or ``F.normalize(attn + eps, p=1,
    dim=-1)``, the same division): probabilities normalised over the queries, then again over the keys (slot
    attention's weighted mean) are meant to be normalised both ways."""
    stored = {t.id for a in walk(func) if isinstance(a, ast.Assign) and any(sub is call for sub in ast.walk(a.value))
              for t in a.targets if isinstance(t, ast.Name)}
    return bool(stored) and any(_divided_by_sum(d, stored) or _l1_normalised(d, stored) for d in walk(func))


def _divided_by_sum(node: ast.AST, stored: set[str]) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and nm.chain_root(node.left) in stored \
        and isinstance(node.right, ast.Call) and isinstance(node.right.func, ast.Attribute) \
        and node.right.func.attr == "sum" and nm.chain_root(node.right.func.value) in stored \
        and nm.int_value(nm.argument(node.right, 0, "dim") or ast.Constant(0)) == -1


def _l1_normalised(node: ast.AST, stored: set[str]) -> bool:
    """``F.normalize(attn, p=1, dim=-1)``: each row divided by its sum of absolute values."""
    if not (isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] == "normalize" and node.args):
        return False
    power = nm.argument(node, 1, "p")
    return bool(set(nm.identifiers(node.args[0])) & stored) and power is not None \
        and nm.fill_value(power) == 1.0 and nm.int_value(nm.argument(node, 2, "dim") or ast.Constant(1)) == -1


def _block_of(func: ast.AST, call: ast.Call) -> list[ast.stmt]:
    """The statement list that holds the statement holding ``call`` (empty if none does)."""
    for block in blocks(func):
        simple = _simple(block)
        if any(sub is call for stmt in simple for sub in ast.walk(stmt)):
            return simple
    return []


def _normalised(call: ast.Call) -> list[ast.expr]:
    """What a softmax call may normalise: its first argument (``F.softmax(s, -1)``) or its receiver
    (``s.softmax(-1)``)."""
    receiver = [call.func.value] if isinstance(call.func, ast.Attribute) else []
    return call.args[:1] + receiver


def _chosen_by_a_flag(func: ast.AST, call: ast.Call, root: Optional[str]) -> bool:
    """``if inverted: attn = sim.softmax(dim=-2) else: attn = sim.softmax(dim=-1)``: the two normalisations of the
    same scores on exclusive branches of one ``if`` (perceiver's inverted attention) are a choice, not a slip."""
    if root is None:
        return False
    for node in walk(func):
        if not isinstance(node, ast.If) or not node.orelse or any(
                isinstance(n, ast.Name) and n.id == root and isinstance(n.ctx, ast.Store) for n in ast.walk(node)):
            continue  # each branch computes its own scores (two implementations), not one choice over the same
        for here, there in ((node.body, node.orelse), (node.orelse, node.body)):
            if any(sub is call for stmt in _simple(here) for sub in ast.walk(stmt)):
                return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in nm.SOFTMAX
                           and nm.chain_root(c.func.value) == root and nm.int_value(nm.argument(c, 0, "dim") or ast.Constant(0)) == -1
                           for stmt in _simple(there) for c in ast.walk(stmt))
    return False


def _simple(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a branch that are not themselves branches, loops, blocks or definitions: what the branch
    itself computes (the choice a flag makes; the statements beside a softmax)."""
    return [stmt for stmt in body if not isinstance(stmt, _COMPOUND)]


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@on(ev.Softmax)
def scores_scaling(scope: Scope, e: ev.Softmax) -> None:
    t = e.tensor
    if t.role != "scores":
        return
    if t.scale == "none":
        if not _fused_scale_one(scope):
            scope.report(msg.UnscaledScores, e.call)
    elif t.scale == "cosine":
        scope.report(msg.UntemperedCosineScores, e.call)
    elif t.scale == "quarter":
        scope.report(msg.HalfScaledScores, e.call)
    elif t.scale == "width" and t.scale_at is not None:
        scope.report(msg.WidthScaledScores, t.scale_at, "d_model")
    elif t.scale == "heads" and t.scale_at is not None:
        scope.report(msg.HeadsScaledScores, t.scale_at, "heads")


def _fused_scale_one(scope: Scope) -> bool:
    """The function's fused branch says the scores take no scaling (``scaled_dot_product_attention(...,
    scale=1.0)``, QK-normed models whose norms learn the temperature): its eager branch follows it."""
    if scope.func is None:
        return False
    for node in walk(scope.func.node):
        if isinstance(node, ast.Call) and _callee(node.func) in nm.FUSED_ATTENTION:
            scale = nm.fused_scale(node)
            if isinstance(scale, ast.Constant) and scale.value == 1:
                return True
    return False


@on(ev.Scaled)
def scaled_after_softmax(scope: Scope, e: ev.Scaled) -> None:
    """Probabilities of Q·Kᵀ multiplied by a head-size factor (``* self.scale``, ``/ math.sqrt(d_k)``)."""
    t: Tensor = e.tensor
    if t.role == "probs" and t.scale == "none" and e.kind in ("head", "width", "heads") and _is_root_factor(e.factor):
        scope.report(msg.ScaledAfterSoftmax, e.node, ast.unparse(e.factor))


def _is_root_factor(node: ast.expr) -> bool:
    """A factor spelled as a (reciprocal) square root or named ``scale``: not a mask or a weight tensor."""
    text = ast.unparse(node).lower()
    return "sqrt" in text or "** 0.5" in text or "** -0.5" in text or "scal" in text


@on(ev.FusedAttention)
def fused_cosine(scope: Scope, e: ev.FusedAttention) -> None:
    """Unit-length queries and keys handed to SDPA or flash-attn with a constant scale (or the default 1/√d):
    cosine similarities with no temperature."""
    if e.query is None or e.key is None or (e.query.scale, e.key.scale) != ("unit", "unit"):
        return
    if e.scale is None or isinstance(e.scale, ast.Constant):
        scope.report(msg.UntemperedCosineScores, e.call)


@on(ev.FusedAttention)
def fused_quarter_scale(scope: Scope, e: ev.FusedAttention) -> None:
    """A kernel given ``d_head ** -0.25`` as its scale, the factor meant for the queries and the keys each: the
    kernel multiplies the scores by it once (sd-webui-text2video fc365b94, ``scale=self.scale`` to xformers)."""
    if e.scale is None:
        return
    attr = nm.self_attr(e.scale)
    defined = scope.class_attr(attr) if attr is not None else scope.scalar_definition(e.scale)
    if isinstance(defined, ast.expr) and QUARTER.search(ast.unparse(defined)):
        scope.report(msg.HalfScaledScores, e.scale)


@on(ev.Scaled)
def note_root_scaling(scope: Scope, e: ev.Scaled) -> None:
    """Remember where a tensor was scaled by a factor that is, by its definition, a (reciprocal) square root."""
    if e.kind == "head":
        roots = scope.memo.setdefault("root_scalings", set())
        if _root_by_definition(scope, e.factor):
            roots.add((e.node.lineno, e.node.col_offset))  # type: ignore[attr-defined, union-attr]


@on(ev.FusedAttention)
def fused_scaled_twice(scope: Scope, e: ev.FusedAttention) -> None:
    """Queries already scaled by 1/√d_head handed to SDPA, flash-attn or xformers with no scale: the kernel applies
    its default 1/√d_head again."""
    q = e.query
    if q is None or q.scale != "head" or not _scaled_by_a_root(scope, q) or not _default_scale(e.scale):
        return
    keyword = "softmax_scale" if e.name.split(".")[-1].startswith("flash_attn") else "scale"
    scope.report(msg.ScaledTwice, e.call, "the queries", q.scale_at[0], f"by {e.name}'s default scale",  # type: ignore[index]
                 f"pass {keyword}=1.0 to {e.name}, or leave the queries unscaled")


@on(ev.Scaled)
def scores_scaled_twice(scope: Scope, e: ev.Scaled) -> None:
    """``q = q / sqrt(d)`` and then ``(q @ k.T) / sqrt(d)``: the scores carry the factor twice. A factor the
    caller passes in (``scaling``, 1.0 where the queries were scaled) is not known here."""
    t = e.tensor
    if e.kind == "head" and t.role == "scores" and t.scale == "head" and _scaled_by_a_root(scope, t) \
            and _root_by_definition(scope, e.factor) and not _from_parameters(scope, e.factor):
        scope.report(msg.ScaledTwice, e.node, "the queries or keys", t.scale_at[0],  # type: ignore[index]
                     f"by {ast.unparse(e.factor)}", "drop one of the two factors")


_ROOT = re.compile(r"sqrt|\*\* \(?-?0\.5|\bpow\(-?0\.5\)")


def _root_by_definition(scope: Scope, factor: ast.expr) -> bool:
    """``1 / math.sqrt(d)``, ``d ** -0.5``, or a local name or ``self.`` attribute defined so."""
    attr = nm.self_attr(factor)
    defined = scope.class_attr(attr) if attr is not None else scope.scalar_definition(factor)  # type: ignore[attr-defined]
    return defined is not None and _ROOT.search(ast.unparse(defined)) is not None


def _scaled_by_a_root(scope: Scope, t: Tensor) -> bool:
    return t.scale_at is not None and t.scale_at in scope.memo.get("root_scalings", ())  # type: ignore[operator]


def _from_parameters(scope: Scope, factor: ast.expr) -> bool:
    func = scope.func
    return func is not None and any(isinstance(n, ast.Name) and n.id in func.params and n.id not in ("self", "cls")
                                    for n in ast.walk(factor))


def _default_scale(scale: Optional[ast.expr]) -> bool:
    return scale is None or isinstance(scale, ast.Constant) and scale.value is None


@on(ev.NormaliserProduct)
def normaliser_multiplied(scope: Scope, e: ev.NormaliserProduct) -> None:
    """Linear attention's normaliser D = q·Σk used as a factor of the output (performer's ``D_inv = einsum(q,
    k.cumsum(-2))`` then ``einsum(..., context, q, D_inv)``): the output must be divided by it."""
    scope.report(msg.NormaliserMultiplied, e.node, ast.unparse(e.operand))
