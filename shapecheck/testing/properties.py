"""The invariants of attention, each a plain function returning a reason (or None when it holds).

``check(subject, case, draw)``: ``case`` is a drawn ``AttentionCase``; ``draw(strategy, label)``
draws anything else (a permutation, a position, a dtype) and records it for the
counterexample. ``PROPERTIES`` lists them in the order they run; ``applies``
returns why a property is skipped for this module, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import torch
from hypothesis import strategies as st
from torch import Tensor

from shapecheck.testing import degenerate, kernels, memory, modern
from shapecheck.testing.adapt import Sizes, supply, window_of
from shapecheck.testing.compare import Draw, Skip, diff as _diff
from shapecheck.testing.dataflow import trace_scores
from shapecheck.testing.strategies import AttentionCase, AttentionShape, random_inputs
from shapecheck.testing.subject import Subject
from shapecheck.testing.positions import inverse_frequencies
from shapecheck.vocabulary import ROTARY_HALVES
from shapecheck.testing.weights import (
    Rotary, reference_attention, rotate_every_two, rotate_half, rotate_pairs, rotations_from_tables,
)

Check = Callable[[Subject, AttentionCase, Draw], Optional[str]]
WARNING = "warning: "  # a reason starting with it is reported as a warning, not a failure
PACKED = " q/k/v) + "  # in the pattern of projections read from one packed Linear (``weights.packed_candidates``)
SCALE_NAMES = ("scaling", "scale", "softmax_scale", "scale_factor", "attn_scale", "sm_scale")


@dataclass(frozen=True)
class Property:
    name: str
    check: Check
    applies: Callable[[Subject], Optional[str]]
    doc: str
    mask: bool = False  # cases carry a key mask (at least one visible key per item)
    fully_masked: bool = False  # item 0 has every key masked
    min_batch: int = 1
    min_seq: int = 1
    warning: bool = False  # a warning unless --strict
    fewer_kv_heads: bool = False  # shapes with kv_heads < heads (grouped-query attention)


def _always(subject: Subject) -> Optional[str]:
    return None


def _needs_mask(subject: Subject) -> Optional[str]:
    return None if subject.has_mask else "no mask argument (or --mask none)"


def _use_mask(subject: Subject, draw: Draw) -> bool:
    return subject.has_mask and bool(draw(st.booleans(), "with_mask"))


def _masked_case(case: AttentionCase, use: bool) -> Optional[Tensor]:
    if not use:
        return None
    return case.keep if case.keep is not None else torch.ones(case.shape.batch, case.shape.seq_k, dtype=torch.bool)


def _causal_flag(subject: Subject) -> bool:
    return subject.causal_mode == "always"


# ---------------------------------------------------------------- the properties


def output_shape(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """The output is (batch, seq_q, d_model), float32 and finite."""
    out = s.run(s.module(case.shape), case, use_mask=False).output
    expected = (case.shape.batch, case.shape.seq_q, case.shape.d_model)
    if tuple(out.shape) != expected:
        return f"output shape {tuple(out.shape)}, expected (batch, seq_q, d_model) = {expected}"
    if out.dtype != case.query.dtype:
        return f"output dtype {out.dtype}, input dtype {case.query.dtype}"
    return None if torch.isfinite(out).all() else "output contains NaN or inf"


def deterministic_eval(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """In eval mode two identical calls agree, even though the module was built with dropout > 0."""
    module = s.module(case.shape)
    first, second = s.run(module, case).output, s.run(module, case).output
    diff = _diff(second, first)
    return f"two calls in eval mode differ: {diff}" if diff else None


def batch_independence(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Item i of a batched call equals item i called alone."""
    module, use = s.module(case.shape), _use_mask(s, draw)
    keep = _masked_case(case, use)
    whole = s.run(module, case, keep=keep, use_mask=use).output
    for i in range(case.shape.batch):
        one = s.run(module, case, query=case.query[i:i + 1], key=case.key[i:i + 1], value=case.value[i:i + 1],
                    keep=None if keep is None else keep[i:i + 1], use_mask=use).output
        diff = _diff(whole[i:i + 1], one)
        if diff:
            return f"batch item {i} differs from the same item alone: {diff}"
    return None


def _permute_keys(case: AttentionCase, perm: list[int]) -> tuple[Tensor, Tensor, Optional[Tensor]]:
    index = torch.tensor(perm)
    keep = None if case.keep is None else case.keep[:, index]
    return case.key[:, index], case.value[:, index], keep


def permutation(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Permuting queries permutes the outputs; permuting keys with values changes nothing."""
    module, use = s.module(case.shape), _use_mask(s, draw)
    keep = _masked_case(case, use)
    base = s.run(module, case, keep=keep, use_mask=use).output
    q_perm = draw(st.permutations(range(case.shape.seq_q)), "query_permutation")
    index = torch.tensor(q_perm)
    if not s.conv.cross:  # self-attention: tokens are queries and keys at once
        keep_p = None if keep is None else keep[:, index]
        out = s.run(module, case, query=case.query[:, index], keep=keep_p, use_mask=use, positions=index).output
        diff = _diff(out, base[:, index])
        return f"permuting the tokens did not permute the outputs: {diff}" if diff else None
    out = s.run(module, case, query=case.query[:, index], keep=keep, use_mask=use).output
    diff = _diff(out, base[:, index])
    if diff:
        return f"permuting the queries did not permute the outputs: {diff}"
    k_perm = draw(st.permutations(range(case.shape.seq_k)), "key_permutation")
    key, value, _ = _permute_keys(case, k_perm)
    keep_k = None if keep is None else keep[:, torch.tensor(k_perm)]
    diff = _diff(s.run(module, case, key=key, value=value, keep=keep_k, use_mask=use).output, base)
    return f"permuting keys together with values changed the output: {diff}" if diff else None


def _no_positions(s: Subject) -> Optional[str]:
    if s.causal_mode == "always":
        return "the module is causal (--causal, detected, or in its 4-D mask): permutations do not apply"
    if s.internal_positions:
        return f"the module encodes positions itself ({s.internal_positions}): permutations do not apply"
    if s.conv.cross and s.conv.positional:
        return f"cross-attention with {s.conv.positional} inputs: key positions cannot follow a permutation"
    return None


def causal(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """With causal attention, editing tokens after position p leaves outputs up to p unchanged."""
    module = s.module(case.shape)
    p = draw(st.integers(0, case.shape.seq_q - 2), "edit_after")
    edited = case.query.clone()
    gen = torch.Generator().manual_seed(case.seed + 1)
    edited[:, p + 1:] = torch.randn(edited[:, p + 1:].shape, generator=gen)  # (batch, seq - p - 1, d_model)
    flag = s.causal_mode == "flag"
    base = s.run(module, case, key=case.query, value=case.query, use_mask=False, causal=flag).output
    out = s.run(module, case, query=edited, key=edited, value=edited, use_mask=False, causal=flag).output
    diff = _diff(out[:, : p + 1], base[:, : p + 1])
    return f"editing tokens after position {p} changed outputs at positions <= {p}: {diff}" if diff else None


def _causal_applies(s: Subject) -> Optional[str]:
    if s.causal_mode is None:
        return "no causal flag (causal / is_causal); pass --causal if the module is causal by construction"
    return None


def padding(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Masked keys do not matter: their contents change nothing, removing them changes nothing, weights are 0."""
    module, keep = s.module(case.shape), case.keep
    if keep is None:
        return None
    base = s.run(module, case, weights=s.conv.returns_weights)
    gen = torch.Generator().manual_seed(case.seed + 2)
    noise = torch.randn(case.key.shape, generator=gen) * 3  # (batch, seq_k, d_model)
    key = torch.where(keep[..., None], case.key, noise)
    value = torch.where(keep[..., None], case.value, -noise) if s.conv.cross else key
    seen = _visible_rows(keep, _causal_flag(s), case.shape.batch, case.shape.seq_q, case.shape.seq_k)
    rows = seen if s.conv.cross else keep & seen
    out = s.run(module, case, query=case.query if s.conv.cross else key, key=key, value=value).output
    diff = _diff(out[rows], base.output[rows])
    if diff:
        return f"changing the contents of masked keys changed the output: {diff}"
    # a window or positions the module adds itself count token indices: removing keys would move the rest
    reason = None if window_of(module) or s.internal_positions else _removal(s, module, case, base.output)
    if reason or base.weights is None:
        return reason
    leak = _masked_weight(base.weights, keep, seen)
    return f"masked keys get attention weight {leak:.3g}" if leak > 1e-6 else None


def _removal(s: Subject, module: Any, case: AttentionCase, whole: Tensor) -> Optional[str]:
    """Item by item: dropping the masked keys from the input gives the same output."""
    for i in range(case.shape.batch):
        visible = case.keep[i].nonzero().flatten()  # type: ignore[index]
        query = case.query[i:i + 1] if s.conv.cross else case.query[i:i + 1, visible]
        key, value = case.key[i:i + 1, visible], case.value[i:i + 1, visible]
        positions = None if s.conv.cross else visible  # positional modules keep each token's position
        alone = s.run(module, case, query=query, key=key, value=value, use_mask=False, positions=positions).output
        rows = whole[i:i + 1] if s.conv.cross else whole[i:i + 1, visible]
        diff = _diff(rows, alone)
        if diff:
            return f"batch item {i} with masked keys differs from the same item with those keys removed: {diff}"
    return None


def _masked_weight(weights: Tensor, keep: Tensor, seen: Tensor) -> float:
    """The largest weight on a masked key, over query rows that can see some key."""
    hidden = ~keep[:, None, :] & seen[:, :, None]  # (batch, seq_q, seq_k)
    hidden = hidden if weights.dim() == 3 else hidden[:, None]
    return float((weights.detach().abs() * hidden).max())


def weights_normalised(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Returned attention weights are non-negative and every query row sums to 1."""
    use = _use_mask(s, draw)
    weights = s.run(s.module(case.shape), case, use_mask=use, keep=_masked_case(case, use), weights=True).weights
    if weights is None:
        return "no attention weights returned when asked"
    if weights.min() < -1e-6:
        return f"attention weights are negative (min {weights.min().item():.3g})"
    sums = weights.sum(dim=-1)
    diff = _diff(sums, torch.ones_like(sums))
    return f"attention rows (over keys) do not sum to 1: {diff}" if diff else None


def _weights_applies(s: Subject) -> Optional[str]:
    if s.unnormalised:
        return f"not normalised attention: {s.unnormalised}"
    return None if s.conv.returns_weights else "the module returns no attention weights"


def reference(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Agrees with softmax(QKᵀ/√d_k)V in float64 from the module's own weights (kv groups, rotary, declared scale)."""
    try:
        return _reference(s, case, draw)
    except Skip:
        raise
    except Exception as error:  # noqa: BLE001 - a packed q/k/v read in a layout it does not have: no verdict
        packed = [p.pattern for p in s.projection_candidates(s.module(case.shape)) if PACKED in p.pattern]
        if packed:
            raise Skip(f"{packed[0]}: the packed q/k/v could not be read ({type(error).__name__}): no reference verdict") from None
        raise


def _reference(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    module, use = s.module(case.shape), _use_mask(s, draw)
    keep = _masked_case(case, use)
    is_causal = _causal_flag(s) or (s.causal_mode == "flag" and case.shape.seq_q == case.shape.seq_k and bool(draw(st.booleans(), "causal")))
    flag = is_causal and s.causal_mode == "flag"
    biases: list[Optional[Tensor]] = [None]
    if s.scores_bias:  # the term the module adds to its scores in this very call
        result, _, bias = trace_scores(module, lambda: s.run(module, case, keep=keep, use_mask=use, causal=flag))
        out = result.output
        biases = [None] if bias is None else [bias.term, None]
    else:
        out = s.run(module, case, keep=keep, use_mask=use, causal=flag).output
    candidates = s.projection_candidates(module)
    if not candidates:
        return None
    proj = candidates[0]
    window = window_of(module) if is_causal else None
    rows = _visible_rows(keep, is_causal, case.shape.batch, case.shape.seq_q, case.shape.seq_k, window)
    if keep is not None and not s.conv.cross:
        rows = rows & keep  # self-attention: a padding token's own output is unspecified (some modules zero it)
    scale = s.options.scale if s.options.scale is not None else declared_scale(module)

    def compare(with_scale: Optional[float]) -> Optional[str]:
        found = None
        used = with_scale if with_scale is not None else case.shape.d_head ** -0.5
        for layout in candidates:  # a packed q/k/v: each layout real code uses
            for rotary in _with_none(rotations_of(s, module, case), biases[0] is not None):  # one per RoPE layout the tables allow
                for bias in _bias_forms(biases, used):  # added after the scale, or before it (then scaled with the scores)
                    for tiled in (False, True):  # kv heads shared by consecutive query heads, or tiled: either order, the same for k and v
                        try:
                            expected = reference_attention(layout, case.shape.heads, case.query, case.key, case.value, keep, is_causal,
                                                           scale=with_scale, rotary=rotary, window=window, tiled=tiled,
                                                           softcap=s.softcap, bias=bias)
                        except RuntimeError:
                            if bias is None:
                                raise
                            continue  # a term of a shape the scores cannot take: the other forms
                        diff = _diff(out[rows], expected[rows])  # rows with no visible key belong to fully_masked_rows
                        if diff is None:
                            return None
                        found = found or diff
                        if case.shape.kv_heads in (None, case.shape.heads):
                            break
        return found

    packed = PACKED in proj.pattern
    try:
        diff = compare(scale)
    except Exception as error:  # noqa: BLE001 - a packing read wrongly: no verdict (the module's own calls ran above)
        if not packed:
            raise
        raise Skip(f"{proj.pattern}: the packed q/k/v could not be read ({type(error).__name__}): no reference verdict") from None
    if diff and scale is None and compare(1.0) is None and _scale_one_everywhere(s):
        return (f"{WARNING}{type(module).__name__} does not scale scores by 1/√d_head (it matches scale 1, as T5 and GPT-Neo do by design); "
                "pass --scale 1 to accept it")
    if not diff:
        return None
    used = scale if scale is not None else case.shape.d_head ** -0.5
    explained = next((name for name, other in _other_scales(case.shape) if abs(other - used) > 1e-9 and compare(other) is None), None)
    if s.internal_positions and not explained and not s.scores_bias:
        raise Skip(f"the module encodes positions itself ({s.internal_positions}) and no standard RoPE (rotate-half or adjacent "
                   "pairs, base 10000) explains its output: no reference verdict")
    if packed and not explained:
        raise Skip(f"{proj.pattern}: no packing the reference knows (stacked, per head) explains the output: no reference verdict")
    found = f"; it matches the scale {explained} instead" if explained else ""
    return f"differs from the float64 reference ({proj.pattern}{', scale ' + format(scale, '.4g') if scale else ''}): {diff}{found}"


def _with_none(rotations: list[Optional[Rotary]], biased: bool) -> list[Optional[Rotary]]:
    """With a bias on the scores the positions may be in the bias alone: no rotation first."""
    return ([None] + [r for r in rotations if r is not None]) if biased else rotations


def _bias_forms(biases: list[Optional[Tensor]], scale: float) -> list[Optional[Tensor]]:
    """Each captured term as added after the scale, and before it (then scaled with the scores)."""
    return [form for b in biases for form in ([None] if b is None else [b, b * scale])]


def not_softmax(s: Subject) -> Optional[str]:
    """Why the module's behaviour shows it is no softmax attention (unnormalised weights, or scores whose per-query
    constant matters: a linear kernel, asked at 2 heads of size 4+, seq 4), or None. Softmax over the queries is a bug
    and is left to the reference to fail. Asked once per subject."""
    if not s.non_softmax_decided:
        s.non_softmax, s.non_softmax_decided = _not_softmax(s), True
    return s.non_softmax


def _not_softmax(s: Subject) -> Optional[str]:
    if s.unnormalised:
        return f"not softmax attention ({s.unnormalised}): the softmax reference does not apply"
    if s.internal_positions or s.conv.positional:
        return None  # positions between the projection and the scores: a shift is no per-query constant there
    if s.softcap is not None:
        return None  # a soft-cap before the softmax does not ignore a per-query constant: the capped reference applies
    m = s.d_head_multiple * max(1, 4 // s.d_head_multiple)
    shape = AttentionShape(2, m, 2 * m, 2, 4, 5 if s.conv.cross else 4, (2 if s.grouped else None))
    query, key, value = random_inputs(shape, 3, cross=s.conv.cross)
    case = AttentionCase(shape, query, key, key if s.conv.memory_name else value, None, 3)
    module = s.module(shape)
    candidates = s.projection_candidates(module)
    if len(candidates) != 1 or PACKED in candidates[0].pattern or candidates[0].q_norm is not None:
        return None  # a packing read in several layouts, or a norm before the scores: no shift of the keys alone
    proj = candidates[0]
    try:
        axis = kernels.softmax_axis(module, proj, lambda twin: s.run(twin, case, use_mask=False).output)
    except Exception:  # noqa: BLE001 - a call the shift cannot drive decides nothing; the reference runs as before
        return None
    if axis == "neither":
        return ("not softmax attention: one vector added to every key changed the output, and softmax ignores a constant "
                "per query (a linear or other kernel): the softmax reference does not apply")
    return None


def _other_scales(shape: AttentionShape) -> tuple[tuple[str, float], ...]:
    """Scales a module may use by mistake, named for the hint: the first that explains the output is the likely bug."""
    return (("1/√d_model", shape.d_model ** -0.5), ("1/d_head", 1 / shape.d_head), ("1 (no scaling)", 1.0),
            ("1/√heads", shape.heads ** -0.5), ("√d_head", shape.d_head ** 0.5))


def _scale_one_everywhere(s: Subject) -> bool:
    """Scale 1 also explains a harder case (2 heads, head size 2+, batch 2, seq 3): a design, not a per-head bug."""
    m = s.d_head_multiple
    shape = AttentionShape(2, 2 * m, 4 * m, 2, 3, 4 if s.conv.cross else 3, (1 if s.grouped else None))
    query, key, value = random_inputs(shape, 1, cross=s.conv.cross)
    case = AttentionCase(shape, query, key, key if s.conv.memory_name else value, None, 1)
    module, is_causal = s.module(shape), _causal_flag(s)
    proj = s.projections(module)
    if proj is None:
        return False
    out = s.run(module, case, use_mask=False).output
    window = window_of(module) if is_causal else None
    return any(_diff(out, reference_attention(proj, 2, case.query, case.key, case.value, None, is_causal, scale=1.0, rotary=rotary,
                                              window=window, softcap=s.softcap)) is None for rotary in rotations_of(s, module, case))


def declared_scale(module: Any) -> Optional[float]:
    """The softmax scale the module declares (``scaling``, ``scale``, ``softmax_scale`` ...), or None."""
    for name in SCALE_NAMES:
        value = getattr(module, name, None)
        if isinstance(value, Tensor) and value.numel() == 1 and not value.requires_grad:
            value = float(value)
        if isinstance(value, float):
            return value
    return None


def rotations_of(s: Subject, module: Any, case: AttentionCase) -> list[Optional[Rotary]]:
    """The rotations the module is given for positions 0..seq-1 (freqs_cis, or cos/sin tables read by value), the standard
    RoPE in both layouts for a module that encodes positions itself, or [None]."""
    name = next((n for n, r in s.conv.supplied.items() if r == "rotary"), None)
    if name is None:
        return internal_rotations(case.shape.seq_q, case.shape.d_head) if s.internal_positions else [None]
    sizes = Sizes(case.shape.heads, case.shape.d_head)
    name = None if name in ROTARY_HALVES else name  # cos and sin passed apart: the whole table
    value = supply(module, s.conv, "rotary", name, case.query, torch.arange(case.shape.seq_q), torch.arange(case.shape.seq_k), sizes)
    if name == "freqs_cis":
        return [rotate_pairs(value)]
    at_zero = supply(module, s.conv, "rotary", name, case.query, torch.zeros(1, dtype=torch.long), torch.zeros(1, dtype=torch.long), sizes)
    first_is_cos = bool(torch.allclose(at_zero[0].double(), torch.ones((), dtype=torch.float64)))  # cos 0 = 1, sin 0 = 0
    return list(rotations_from_tables(value[0], value[1], first_is_cos))


def internal_rotations(seq: int, d_head: int) -> list[Optional[Rotary]]:
    """Standard RoPE (base 10000, Su et al. 2021) at positions 0..seq-1, rotate-half and adjacent pairs."""
    freqs = torch.arange(seq, dtype=torch.float64)[:, None] * inverse_frequencies(d_head)[None, :]  # (seq, d_head / 2)
    halves, pairs = torch.cat([freqs, freqs], dim=-1)[None], freqs.repeat_interleave(2, dim=-1)[None]  # (1, seq, d_head)
    return [rotate_half(halves.cos(), halves.sin()), rotate_every_two(pairs.cos(), pairs.sin())]


def _visible_rows(keep: Optional[Tensor], is_causal: bool, batch: int, seq_q: int, seq_k: int, window: Optional[int] = None) -> Tensor:
    """(batch, seq_q): query rows that can see at least one key under the padding, causal and window masks."""
    allowed = torch.ones(batch, seq_q, seq_k, dtype=torch.bool)
    if keep is not None:
        allowed = allowed & keep[:, None, :]
    if is_causal:
        allowed = allowed & torch.ones(seq_q, seq_k, dtype=torch.bool).tril()
    if window is not None:
        allowed = allowed & torch.ones(seq_q, seq_k, dtype=torch.bool).triu(1 - window)
    return allowed.any(dim=-1)


def _reference_applies(s: Subject) -> Optional[str]:
    if not s.uses_reference:
        return s.reference_note
    if not_softmax(s):
        return not_softmax(s)
    if s.conv.positional == "positions" or (s.conv.positional in ("alibi", "position_bias") and not s.scores_bias):
        return f"the module takes {s.conv.positional.replace('_', ' ')} inputs the float64 reference does not model"
    return None


def gradients(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """A loss on the output gives every parameter a finite gradient."""
    module, use = s.module(case.shape), _use_mask(s, draw)
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    if not params:
        raise Skip("the module has no trainable parameters: no gradient to check")
    out = s.run(module, case, keep=_masked_case(case, use), use_mask=use).output
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(case.seed))
    grads = torch.autograd.grad((out * weight).sum(), [p for _, p in params], allow_unused=True)
    for (name, _), grad in zip(params, grads):
        if grad is None:
            return f"parameter {name} gets no gradient"
        if not torch.isfinite(grad).all():
            return f"parameter {name} has a non-finite gradient"
    return None


def fully_masked_rows(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Item 0 has every key masked: it follows the declared policy, and nothing leaks into other items or gradients."""
    module = s.module(case.shape)
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    out = s.run(module, case).output
    rest = s.run(module, case, query=case.query[1:], key=case.key[1:], value=case.value[1:], keep=case.keep[1:]).output  # type: ignore[index]
    reason = _policy(s, module, case, out[:1])
    if reason:
        return reason
    diff = _diff(out[1:], rest)
    if diff:
        return f"a fully masked batch item changed the other items: {diff}"
    if params:
        grads = torch.autograd.grad(out[1:].sum() + (out[:1] * 0).sum(), [p for _, p in params], allow_unused=True)
        bad = next((n for (n, _), g in zip(params, grads) if g is not None and not torch.isfinite(g).all()), None)
        if bad:
            return f"with one fully masked batch item, parameter {bad} gets a NaN/inf gradient"
    return None


def _policy(s: Subject, module: Any, case: AttentionCase, masked: Tensor) -> Optional[str]:
    policy = s.options.masked_rows
    nan = bool(torch.isnan(masked).any())
    if policy == "nan":
        return None
    if not torch.isfinite(masked).all():
        return f"the fully masked item's output is {'NaN' if nan else 'inf'} (policy: {policy})"
    proj = s.projections(module)
    if policy in ("zeros", "uniform") and proj is not None:
        keep = None if policy == "uniform" else case.keep[:1]  # type: ignore[index]
        expected = reference_attention(proj, case.shape.heads, case.query[:1], case.key[:1], case.value[:1], keep)
        if policy == "zeros":
            expected = reference_attention(proj._replace(wv=proj.wv * 0, bv=None), case.shape.heads, case.query[:1], case.key[:1], case.value[:1])
        diff = _diff(masked, expected)
        return f"the fully masked item does not follow the {policy} policy: {diff}" if diff else None
    return None


def low_precision(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """float16 and bfloat16 runs (with a key mask where the module takes one) stay finite."""
    dtype = draw(st.sampled_from([torch.float16, torch.bfloat16]), "dtype")
    module = s.fresh_copy(case.shape).to(dtype)
    query, key, value = (t.to(dtype) for t in random_inputs(case.shape, case.seed, cross=s.conv.cross))
    out = s.run(module, case, query=query, key=key, value=value).output
    if not torch.isfinite(out).all():
        return f"{str(dtype).replace('torch.', '')} output contains NaN or inf"
    return None


HALF_DTYPES = (torch.float16, torch.bfloat16)
_PLATFORM = ("not implemented for 'Half'", "not implemented for 'BFloat16'")  # CPU kernels missing: the platform, not the module


def half_precision_masks(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """float16 / bfloat16 under stress: large logits, left padding (with the module's own causal mask: summed masks) and
    fully masked items give finite outputs wherever float32 on the same inputs does."""
    dtype = draw(st.sampled_from(HALF_DTYPES), "dtype")
    large = draw(st.sampled_from([8.0, 32.0]), "input_scale")  # scores grow with its square
    keep = None
    if s.has_mask:  # item i hides its first pads[i] keys; seq_k hides them all
        pads = draw(st.lists(st.integers(0, case.shape.seq_k), min_size=case.shape.batch, max_size=case.shape.batch), "left_pads")
        keep = torch.arange(case.shape.seq_k)[None, :] >= torch.tensor(pads)[:, None]  # (batch, seq_k)
        draw(st.just(describe_mask(keep)), "mask")  # the counterexample shows the mask used
    query, key, value = (t.to(dtype) for t in random_inputs(case.shape, case.seed, cross=s.conv.cross))
    query, key, value = query * large, key * large, value
    module = s.fresh_copy(case.shape).to(dtype)
    try:
        half = s.run(module, case, query=query, key=key, value=value, keep=keep, use_mask=keep is not None).output
    except (RuntimeError, NotImplementedError) as error:
        if any(text in str(error) for text in _PLATFORM):
            raise Skip(f"the module cannot run in {str(dtype).replace('torch.', '')} on this device: {str(error)[:120]}") from None
        raise
    full = s.run(s.module(case.shape), case, query=query.float(), key=key.float(), value=value.float(), keep=keep,
                 use_mask=keep is not None).output
    bad = (~torch.isfinite(half) & torch.isfinite(full)).any(dim=-1)  # (batch, seq_q)
    seen = torch.ones_like(bad) if keep is None else _visible_rows(keep, _causal_flag(s), case.shape.batch, case.shape.seq_q,
                                                                  case.shape.seq_k)
    if s.options.masked_rows == "nan":  # NaN declared for rows that see no key: judge the others only
        bad = bad & seen
    if not bad.any():
        return None
    at = [int(i) for i in (bad & seen if (bad & seen).any() else bad).nonzero()[0]]
    what = "NaN" if torch.isnan(half[at[0], at[1]]).any() else "inf"
    found = (f"{str(dtype).replace('torch.', '')} output is {what} at [batch {at[0]}, position {at[1]}] where float32 is finite "
             f"(inputs ×{large:g}, key mask {describe_mask(keep)})")
    if bool(seen[at[0], at[1]]) or s.options.strict:
        return found
    return f"{WARNING}{found}, a row with no visible key (fails with --strict, as fully_masked_rows does)"


def describe_mask(keep: Optional[Tensor]) -> str:
    """'none' or rows of 1 (visible) / 0 (masked) keys per batch item: '110/011'."""
    if keep is None:
        return "none"
    return "/".join("".join("1" if v else "0" for v in row) for row in keep.tolist())


PROPERTIES: tuple[Property, ...] = (
    Property("output_shape", output_shape, _always, "output is (batch, seq_q, d_model), finite"),
    Property("deterministic_eval", deterministic_eval, _always, "eval mode is deterministic (built with dropout > 0)"),
    Property("batch_independence", batch_independence, _always, "item i of a batch equals item i alone", mask=True, min_batch=2),
    Property("permutation", permutation, _no_positions, "permutation equivariance (queries) and invariance (keys with values)", mask=True, min_seq=2),
    Property("causal", causal, _causal_applies, "editing future tokens leaves earlier outputs unchanged", min_seq=2),
    Property("padding", padding, _needs_mask, "masked keys' contents and presence change nothing; zero weight", mask=True),
    Property("weights_normalised", weights_normalised, _weights_applies, "attention weights >= 0, rows sum to 1", mask=True),
    Property("reference", reference, _reference_applies, "agrees with a float64 reference from the module's weights", mask=True),
    Property("gradients", gradients, _always, "every parameter gets a finite gradient", mask=True),
    Property("fully_masked_rows", fully_masked_rows, _needs_mask, "a row with every key masked: policy kept, no NaN leaks", mask=True, fully_masked=True, min_batch=2, warning=True),
    Property("low_precision", low_precision, _always, "float16 / bfloat16 outputs stay finite", mask=True),
    Property("half_precision_masks", half_precision_masks, _always,
             "float16 / bfloat16 with large logits, left padding and fully masked items: finite where float32 is", min_seq=2),
    Property("constant_values", kernels.constant_values, kernels._normalised_applies,
             "every visible key the same token: each query gets that token's output alone", mask=True),
    Property("one_key", kernels.one_key, kernels._one_key_applies, "a single key: every query gets its value through the projections"),
    Property("input_dependence", degenerate.input_dependence, _always, "the output changes with the input and is not the input itself",
             min_seq=2),
    Property("content_weights", degenerate.content_weights, _always, "weights depend on query-key content (not uniform over keys)",
             min_seq=2),
    Property("kv_cache", modern.kv_cache, modern._cache_applies, "prefill then decode through the cache equals one full forward", min_seq=2),
    Property("cache_offset", modern.cache_offset, modern._cache_offset_applies,
             "prefill and decode through the cache at positions p, p + 1 ... equal one full forward at 0, 1 ...", min_seq=2),
    Property("rotary", modern.rotary, modern._rotary_applies, "shifting every position by an offset changes nothing"),
    Property("positions_matter", modern.positions_matter, modern._positions_applies, "other positions change the output", min_seq=2),
    Property("grouped_heads", modern.grouped_heads, modern._grouped_applies, "each kv head serves its group of query heads", mask=True,
             fewer_kv_heads=True),
    Property("sliding_window", modern.sliding_window, modern._window_applies, "query i sees exactly keys i - w < j <= i", min_seq=2),
    Property("window_padding", modern.window_padding, modern._window_padding_applies,
             "window and padding: query i sees exactly the keys in its window that are not padding", mask=True, min_seq=2),
    Property("mems", memory.mems, memory._mems_applies, "with mems = earlier hidden states: equal to recomputing over both, last rows"),
    Property("cross_attention", modern.cross_attention, modern._cross_applies, "a memory of another length: shape, order, reference"),
)
MODEL_PROPERTY_NAMES = ("padding_right", "padding_left", "future_independence")  # whole models: see shapecheck.testing.models
PROPERTY_NAMES: tuple[str, ...] = tuple(p.name for p in PROPERTIES) + MODEL_PROPERTY_NAMES
