"""Masks: discarded or misnamed masked_fill (SC107, SC108), conventions (SC109), masking after the softmax
(SC117), fill values that do not mask (SC118), large literal fills with no dtype guard (SC120), a key padding mask
laid on the query axis (SC121), two masking masks joined with '&' (SC125), two additive masks holding
finfo(dtype).min summed with no clamp (SC131), a mask turned into a bias in its own dtype (SC133).

The convention rules read a mask's polarity (``shapecheck.lint.polarity``: declared, documented, a public API's
name, or a builder in the function) and the positions it fills; where the polarity is unknown they stay silent.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import mask_kinds as mk
from shapecheck.lint import names as nm
from shapecheck.lint import polarity as pol
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import ONE, Tensor, Value
from shapecheck.lint.nodes import of_type, walk

_SCORE_WORDS = re.compile(r"score|attn|attention|weight|logit|bias", re.I)


@on(ev.Discarded, reports=("SC107",))
def masked_fill_discarded(scope: Scope, e: ev.Discarded) -> None:
    call = e.call
    if isinstance(call.func, ast.Attribute) and call.func.attr == "masked_fill":
        source = call.args[0] if nm.is_namespace(call.func.value) and call.args else call.func.value
        scope.report(msg.MaskedFillDiscarded, call, ast.unparse(source))


@on(ev.Softmax)
def mask_reaches_softmax(scope: Scope, e: ev.Softmax) -> None:
    """Seed 001: masked scores kept under one name while the softmax reads another."""
    t = e.tensor
    if t.role != "scores" or not isinstance(e.source, ast.Name):
        return
    name, line = e.source.id, e.call.lineno
    if t.partial and t.mask_source is not None and t.mask_source != name and t.mask_at is not None:
        scope.report(msg.MaskedFillWrongName, t.mask_at, name, " only when the mask branch runs", line,
                     f"'{name}', unbound otherwise (the scores are in '{t.mask_source}')", t.mask_source)
        scope.memo.setdefault("unbound_explained", set()).add((name, line))  # SC183 need not say it again
        return
    for other, value in scope.env.items():
        if (other != name and isinstance(value, Tensor) and value.mask_source == name
                and value.mask_uid == t.uid and value.mask_at is not None and t.uid):
            scope.report(msg.MaskedFillWrongName, value.mask_at, other, "", line, f"the unmasked '{name}'", name)


@on(ev.MaskedFill)
def mask_convention(scope: Scope, e: ev.MaskedFill) -> None:
    """A fill whose mask is, by its polarity, the positions that may attend (``masked_fill(attention_mask, ...)``,
    ``masked_fill(~key_padding_mask, ...)``, ``masked_fill(1 - triu(..., 1), ...)``); and two masks that are
    True where masked joined by ``&`` (SC125)."""
    if e.mask is None or not _fills_scores(e):
        return
    value = nm.fill_value(e.fill)
    if value is not None and value >= 0:
        return  # ``bias.masked_fill_(keep, 0.0)`` on a bias that starts at the minimum: the fill opens what it marks
    joined: list[pol.Combination] = []
    found = pol.polarity(scope, e.mask, joined)
    for both in joined:
        scope.report(msg.MaskedMasksIntersected, both.node, ast.unparse(both.node.left), ast.unparse(both.node.right))
    if found is None or not found.keep or found.source.startswith("built as") and not _reaches_exp(scope, e, True):
        return  # a mask built in place is a causal mask only where the scores it fills reach a softmax
    name = found.name
    fix = f"fill where the mask is 0: masked_fill({name} == 0, ...)" if found.own_keep else \
        f"fill where the mask is True: masked_fill({name}, ...), without negating it"
    rule = msg.MaskConventionByName if found.by_name else msg.MaskConvention
    scope.report(rule, e.mask, name, found.own_text, fix)


@on(ev.MaskedFill)
def mask_after_softmax(scope: Scope, e: ev.MaskedFill) -> None:
    value = nm.fill_value(e.fill)
    if isinstance(e.tensor, Tensor) and e.tensor.role == "probs" and e.tensor.scale != "unknown" \
            and value is not None and value <= -1.0:
        scope.report(msg.MaskAfterSoftmax, e.call, f"masked_fill(..., {ast.unparse(e.fill)})")  # type: ignore[arg-type]
    elif isinstance(e.tensor, Tensor) and value == 0 and e.mask is not None \
            and _zeroed_unmasked(scope, e.tensor, e.mask, e.call):
        scope.report(msg.MaskAfterSoftmax, e.call, f"masked_fill(..., {ast.unparse(e.fill)})")  # type: ignore[arg-type]


@on(ev.MaskAdded)
def additive_mask_after_softmax(scope: Scope, e: ev.MaskAdded) -> None:
    if e.tensor.role == "probs" and e.tensor.scale != "unknown":
        scope.report(msg.MaskAfterSoftmax, e.node, f"+ {ast.unparse(e.mask)}")


@on(ev.Softmax)
def softmax_of_scores(scope: Scope, e: ev.Softmax) -> None:
    """Remember the functions whose softmax reads scores (Q·Kᵀ): only their probabilities are attention's."""
    if e.tensor.role == "scores" and scope.func is not None:
        scope.memo[f"scores_softmax:{id(scope.func.node)}"] = True


@on(ev.MaskMultiplied)
def mask_multiplied_after_softmax(scope: Scope, e: ev.MaskMultiplied) -> None:
    """Only a factor that holds 0 and 1 by data flow (a negation, a comparison, a boolean made so): a tensor merely
    named a mask may be a soft weight multiplied in by design (a similarity, a gate)."""
    if _zero_one(scope, e.mask) and _zeroed_unmasked(scope, e.tensor, e.mask, e.node):
        scope.report(msg.MaskAfterSoftmax, e.node, f"* {ast.unparse(e.mask)}")


def _zero_one(scope: Scope, node: ast.expr) -> bool:
    if mk.kind(scope, node) in mk.ZERO_ONE:
        return True
    dotted = nm.dotted(node.func) if isinstance(node, ast.Call) else None
    return (dotted or "").rpartition(".")[2] == "bitwise_not"  # defined for booleans and integers only


def _zeroed_unmasked(scope: Scope, t: Tensor, mask: ast.expr, node: ast.AST) -> bool:
    """``probs *= ~mask``, ``probs.masked_fill(mask, 0)`` where the mask reaches the scores nowhere before (GPT2
    0519d57b): the masked keys took their share of the softmax, and the rows no longer sum to one. Not a mask the
    function read before (the scores were masked; zeroing again after the softmax is harmless), not one over the
    queries (``mask.unsqueeze(-1)``, ``mask[..., None]``: whole rows zeroed), nor probabilities divided by a sum
    afterwards (renormalised)."""
    if t.role != "probs" or t.scale == "unknown" or scope.func is None \
            or f"scores_softmax:{id(scope.func.node)}" not in scope.memo:
        return False
    if re.search(r"unsqueeze\((-1|dim=-1)\)|None\]$|,1\)$", ast.unparse(mask).replace(" ", "")):
        return False
    masks = {n.id for n in ast.walk(mask) if isinstance(n, ast.Name) and "mask" in n.id.lower()}
    if any("head" in m.lower() for m in masks):
        return False  # ``probs * head_mask``: heads switched off (Hugging Face's head pruning), not keys
    line = getattr(node, "lineno", 0)
    tests = {id(n) for s in walk(scope.func.node) if isinstance(s, (ast.If, ast.IfExp, ast.Assert, ast.While))
             for n in ast.walk(s.test)}  # type: ignore[attr-defined]
    if not masks or any(isinstance(n, ast.Name) and n.id in masks and isinstance(n.ctx, ast.Load) and n.lineno < line
                        and id(n) not in tests for n in walk(scope.func.node)):
        return False  # the mask was read before: the scores were masked, or the mask made into another
    return not _renormalised(scope, line)


def _renormalised(scope: Scope, line: int) -> bool:
    """A division by a sum somewhere after ``line`` in the function: the rows made to sum to one again."""
    found = scope.source_text()
    func = scope.func.node if scope.func is not None else None
    if found is None or func is None:
        return True
    text, starts = found
    end = func.end_lineno or line
    return _DIVIDED_BY_SUM.search(text, starts[min(line, len(starts) - 1)],
                                  starts[end] if end < len(starts) else len(text)) is not None


_DIVIDED_BY_SUM = re.compile(r"/=?\s*\(?\s*[\w.\[\]]*\.sum\(|/=?\s*\(?\s*torch\.sum\(")


@on(ev.MaskedFill)
def fill_does_not_mask(scope: Scope, e: ev.MaskedFill) -> None:
    value = nm.fill_value(e.fill)
    if isinstance(e.tensor, Tensor) and e.tensor.role == "scores" and value is not None and value > -1.0 \
            and _reaches_exp(scope, e):
        scope.report(msg.FillDoesNotMask, e.call, ast.unparse(e.fill))  # type: ignore[arg-type]


_EXP_WORDS = re.compile(r"softmax|\bexp\b|logsumexp", re.I)


def _reaches_exp(scope: Scope, e: ev.MaskedFill, strict: bool = False) -> bool:
    """Whether the filled scores go on to a softmax (or exp) in this function, or leave it (returned, stored):
    scores that are only multiplied on (linear attention, a copy head) are masked by a 0 fill."""
    func = scope.func
    if func is None or scope.following:
        return True
    names = set(scope.targets)
    if isinstance(e.receiver, ast.Name):
        names.add(e.receiver.id)
    if not names:
        return True
    filled = set(names)
    for _ in range(3):  # what is computed from the filled scores (``scores = scores + bias``) carries them on
        names |= {t.id for node in walk(func.node) if isinstance(node, (ast.Assign, ast.AugAssign))
                  and names & set(nm.identifiers(node.value))
                  for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    nodes = walk(func.node)
    if any(isinstance(node, ast.Call) and _EXP_WORDS.search(nm.dotted(node.func) or "")
           and names & set(nm.identifiers(node)) for node in nodes):
        return True
    if strict or any(_weights_applied(node, names) for node in nodes):
        return False  # multiplied on as they are, with no exp anywhere: linear attention, where 0 masks
    for node in nodes:
        if isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(isinstance(v, ast.Name) and v.id in filled for v in values):
                return True  # the scores themselves leave: the caller may take their softmax
        elif isinstance(node, ast.Assign) and any(_stored_away(t, filled) for t in node.targets):
            if filled & set(nm.identifiers(node.value)):
                return True
    return False


def _weights_applied(node: ast.AST, names: set[str]) -> bool:
    """A product (``@``, matmul, bmm, einsum) one of whose operands is the filled scores or what came of them."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        operands = [node.left, node.right]
    elif isinstance(node, ast.Call) and (nm.dotted(node.func) or "").rsplit(".", 1)[-1] in nm.PRODUCTS:
        operands = list(node.args)
    else:
        return False
    return any(names & set(nm.identifiers(o)) for o in operands)


def _stored_away(target: ast.expr, filled: set[str]) -> bool:
    """An attribute or item store that is not an update of the filled scores themselves (``T[..., i] = ...``)."""
    return not isinstance(target, ast.Name) and nm.chain_root(target) not in filled


_GUARD_WORDS = re.compile(r"finfo|dtype|float32|float16|bfloat16|^half$|autocast|^amp$", re.I)
_MODEL_HALF = re.compile(r"^half$|autocast|^amp$|GradScaler", re.I)  # a model (or a run) set to half precision
_HALF_MAX = 65504.0  # the largest finite float16


@on(ev.MaskedFill)
def fill_overflows_half(scope: Scope, e: ev.MaskedFill) -> None:
    """A literal fill beyond float16's range (-1e9, -1e8) on scores that feed a softmax, in a module that runs
    in half precision (``.half()``, ``float16``, autocast), inside a function with no dtype guard.

    -1e4 is not reported: float16 holds it and exp(-1e4) is 0, so it masks."""
    value = nm.fill_value(e.fill)
    if not (isinstance(e.tensor, Tensor) and e.tensor.role == "scores" and value is not None
            and -1e30 <= value < -_HALF_MAX and isinstance(e.fill, (ast.UnaryOp, ast.Constant))):
        return
    func = scope.func
    if func is None or scope.following or not _runs_half(scope) or not _has_softmax(func.node) \
            or _has_dtype_guard(func.node):
        return
    scope.report(msg.FillOverflowsHalf, e.call, f"-{-value:.0e}".replace("e+0", "e").replace("e+", "e"))


def _identifiers(node: ast.AST):
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            yield n.id, n
        elif isinstance(n, ast.Attribute):
            yield n.attr, n
        elif isinstance(n, ast.keyword) and n.arg is not None:
            yield n.arg, n
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 40:
            yield n.value, n


def _runs_half(scope: Scope) -> bool:
    """The scores may be float16: the file sets a model or a run to half precision (``.half()``, autocast,
    ``GradScaler``). A tensor cast to float16 somewhere says nothing of the scores: a rotary helper's complex32
    times float32 frequencies is complex64 again, and its result float32."""
    if "model_half" not in scope.memo:
        scope.memo["model_half"] = any(_MODEL_HALF.search(word) for word, _ in _identifiers(scope.tree))
    return bool(scope.memo["model_half"])


def _has_softmax(func: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and "softmax" in (nm.dotted(n.func) or "").lower() for n in walk(func))


def _has_dtype_guard(func: ast.AST) -> bool:
    """``torch.finfo``, a dtype read or check, ``.float()``/``.half()``/``.to(torch.float32)``, autocast."""
    return any(word == "float" and isinstance(n, ast.Attribute) or _GUARD_WORDS.search(word)
               for word, n in _identifiers(func) if not isinstance(n, ast.Constant))


@on(ev.MaskedFill)
def padding_mask_on_queries(scope: Scope, e: ev.MaskedFill) -> None:
    """Cross-attention scores [batch, heads, seq_q, seq_k] filled by a mask whose tracked seq_k axis sits at the
    query position with a size-1 axis last (``mask[:, None, :, None]``, ``unsqueeze(1).unsqueeze(-1)``)."""
    t = e.tensor
    if not (isinstance(t, Tensor) and t.role == "scores" and t.axes is not None and len(t.axes) == 4
            and t.key_pos == 3) or e.mask is None or scope.following:
        return
    query, key = t.axes[2], t.axes[3]
    if query is None or key is None or not query.atoms or not key.atoms or query == key:
        return
    mask = _mask_axes(scope, _mask_core(e.mask))
    if mask is None or len(mask) != 4:
        return
    if mask[2] == key and mask[3] is not None and not mask[3].atoms and mask[3].text == "1":
        scope.report(msg.PaddingMaskOnQueries, e.mask, ast.unparse(e.mask), key.text, query.text)


def _mask_core(node: ast.expr) -> ast.expr:
    """The mask tensor under ``~m``, ``m == 0``, ``m.bool()``, ``m.logical_not()``."""
    while True:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            node = node.operand
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            node = node.left
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
                and node.func.attr in ("bool", "logical_not"):
            node = node.func.value
        else:
            return node


def _mask_axes(scope: Scope, node: ast.expr) -> Optional[tuple]:
    """The mask's axes: tracked, or ``m[:, None, :, None]`` of a tracked ``m`` (None adds a size-1 axis)."""
    if isinstance(node, ast.Subscript):
        base = scope.values.get(id(node.value))
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(base, Tensor) or base.axes is None:
            return None
        whole = [p for p in parts if isinstance(p, ast.Slice) and p.lower is None and p.upper is None
                 and p.step is None]
        new = [p for p in parts if isinstance(p, ast.Constant) and p.value is None]
        if len(whole) + len(new) != len(parts) or len(whole) != len(base.axes):
            return None
        axes, source = [], iter(base.axes)
        for p in parts:
            axes.append(next(source) if isinstance(p, ast.Slice) else ONE)
        return tuple(axes)
    value = scope.values.get(id(node))
    return value.axes if isinstance(value, Tensor) else None


def _fills_scores(e: ev.MaskedFill) -> bool:
    return fills_scores(e.tensor, e.receiver)


def fills_scores(tensor: Optional[Value], receiver: Optional[ast.expr]) -> bool:
    """Whether a fill's receiver is attention scores: by what lint knows of it, or by its name."""
    if isinstance(tensor, Tensor) and tensor.role == "scores":
        return True
    return receiver is not None and any(_SCORE_WORDS.search(n) for n in nm.identifiers(receiver))




_CLAMPS = frozenset({"clamp", "clamp_", "clamp_min", "clamp_min_", "clip", "clip_", "max", "maximum"})


@on(ev.FunctionDone)
def mask_sum_overflows_half(scope: Scope, e: ev.FunctionDone) -> None:
    """``causal + padding`` where each is an additive mask built in this function with ``torch.finfo(dtype).min``
    (a ``full``, a fill, ``(1 - m) * min``) of a dtype that may be float16 (not a literal float32/float64), and
    neither the sum nor the name it is stored under is clamped in the function: min + min is -inf in float16."""
    func = scope.func
    if func is None or scope.following or "finfo" not in scope.callees.get(id(func.node), ()):
        return
    key = f"mask_sum:{id(func.node)}"
    if key in scope.memo:
        return
    scope.memo[key] = True
    stores: dict[str, list[tuple[int, Optional[ast.expr]]]] = {}  # name -> (line, value) of each store
    clamped: set[str] = set()
    sums: list[tuple[ast.AST, ast.expr, ast.expr, Optional[str]]] = []
    for node in walk(func.node):
        if isinstance(node, ast.Assign):
            floor = isinstance(node.value, ast.Call) and _callee(node.value) in _CLAMPS  # a floor, not a mask
            for target in node.targets:
                if isinstance(target, ast.Name):
                    end = node.end_lineno or node.lineno
                    stores.setdefault(target.id, []).append((end, None if floor else node.value))
                    if isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add):
                        sums.append((node.value, node.value.left, node.value.right, target.id))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            stores.setdefault(node.target.id, []).append((node.lineno, None))
            if isinstance(node.op, ast.Add):
                sums.append((node, node.target, node.value, node.target.id))
        elif isinstance(node, ast.Call) and _callee(node) in _CLAMPS:
            inside = node.args[0] if node.args and not _method(node) else (node.func.value if _method(node) else None)
            if inside is not None:
                clamped |= {n.id for n in ast.walk(inside) if isinstance(n, ast.Name)}
                clamped |= {str(id(n)) for n in ast.walk(inside) if isinstance(n, ast.BinOp)}
    for node, left, right, target in sums:
        if str(id(node)) in clamped or target in clamped:
            continue
        dtypes = [_finfo_min(side) or (_held(stores, side.id, node.lineno) if isinstance(side, ast.Name) else None)
                  for side in (left, right)]
        if all(dtypes) and dtypes[0] != "float32":
            shown = ast.unparse(node) if isinstance(node, ast.BinOp) else f"{ast.unparse(left)} += {ast.unparse(right)}"
            scope.report(msg.MaskSumOverflowsHalf, node, shown, dtypes[0])


def _held(stores: dict[str, list[tuple[int, Optional[ast.expr]]]], name: str, line: int,
          depth: int = 0) -> Optional[str]:
    """The finfo dtype ``name`` holds from its last store above ``line``: a ``finfo(dtype).min`` in the value,
    or a view, slice or cast of a name that holds one (None: not a min mask, or unknown)."""
    before = [(at, value) for at, value in sorted(stores.get(name, []), key=lambda s: s[0]) if at < line]
    if not before or before[-1][1] is None or depth > 8:
        return None
    at, value = before[-1]
    found = _finfo_min(value)
    if found is not None:
        return found
    root = value
    while isinstance(root, (ast.Subscript, ast.Call)):
        root = root.value if isinstance(root, ast.Subscript) else (
            root.func.value if isinstance(root.func, ast.Attribute) and not nm.is_namespace(root.func.value) else None)
    return _held(stores, root.id, at, depth + 1) if isinstance(root, ast.Name) else None


def _callee(call: ast.Call) -> str:
    return (nm.dotted(call.func) or getattr(call.func, "attr", "") or "").split(".")[-1]


def _method(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and not nm.is_namespace(call.func.value)


def _finfo_min(node: ast.expr) -> Optional[str]:
    """The dtype (as written) of a ``torch.finfo(dtype).min`` inside ``node``; "float32" for a literal full-precision
    dtype; None when there is none."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr == "min" and isinstance(sub.value, ast.Call) \
                and _callee(sub.value) == "finfo" and sub.value.args:
            dtype = ast.unparse(sub.value.args[0])
            return "float32" if re.search(r"float32|float64|torch\.float$|torch\.double", dtype) else dtype
    return None


_TO_BIAS = re.compile(r"bias|additive|expand_mask|extended_attention_mask|to_float_mask", re.I)


@on(ev.OwnDtype)
def bias_in_mask_dtype(scope: Scope, e: ev.OwnDtype) -> None:
    """``mask_to_bias(memory_mask, memory_mask.dtype)``: a call that turns a mask into an additive bias (its name
    says so) given, as the bias's dtype, the dtype of the very mask it converts (bool or int), so the bias is
    never in the activations' dtype."""
    mask = e.dtype.value
    callee = _callee(e.call)
    if scope.following or not isinstance(mask, ast.Name) or "mask" not in mask.id.lower() \
            or not _TO_BIAS.search(callee):
        return
    if e.call.keywords and any(kw.value is e.dtype and kw.arg not in (None, "dtype") for kw in e.call.keywords):
        return
    scope.report(msg.BiasInMaskDtype, e.dtype, f"{callee}(...)", mask.id, callee)


@on(ev.OwnParameterKeyword)
def mask_parameter_unread(scope: Scope, e: ev.OwnParameterKeyword) -> None:
    """``self.encoder(src, mask=mask, src_key_padding_mask=mask)`` in a function that takes ``src_key_padding_mask``
    and never reads it (icefall, fbc1d3b1): one mask given for two mask arguments of a call, where the function's
    own mask of that name belongs."""
    name = e.keyword.arg or ""
    func = scope.func
    if func is None or scope.following or not name.lower().endswith("mask") \
            or isinstance(e.keyword.value, ast.Constant):
        return  # a flag (``requires_attention_mask=True``) or ``mask=None`` on purpose is no other mask
    given = ast.dump(e.keyword.value)
    if not any(kw is not e.keyword and kw.arg and kw.arg.lower().endswith("mask") and ast.dump(kw.value) == given
               for kw in e.call.keywords) or _reads(scope, func.node, name):
        return  # a layer that takes the self-attention mask and passes the cross-attention one under its name
    scope.report(msg.MaskParameterUnread, e.keyword.value, name, ast.unparse(e.keyword.value))


def _reads(scope: Scope, func: ast.AST, name: str) -> bool:
    """Whether ``func`` reads ``name`` anywhere (``locals()`` or ``vars()`` read every name)."""
    key = f"loaded:{id(func)}"
    if key not in scope.memo:
        loaded = {n.id for n in of_type(func, ast.Name) if isinstance(n.ctx, ast.Load)}
        scope.memo[key] = None if loaded & {"locals", "vars"} else loaded
    found = scope.memo[key]
    return found is None or name in found  # type: ignore[operator]
