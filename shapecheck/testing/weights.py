"""Projection weights found by name, and the float64 reference attention built from them.

The names are ``STYLES`` in ``shapecheck/projections.py``, the table ``shapecheck audit``
also reads, tried in order on the module itself: every q/k/v projection of a style must be
there (three Linear/Conv1D modules or raw weights, or one stacked [q; k; v] weight chunked
in three; GPT-2's ``Conv1D`` weights are transposed), and its output projection too, except
for BERT's self-attention, whose output dense lives in the parent (and never an output
followed by a shortcut, seed 002's ``fuse_heads``). Fused weights that
interleave heads (``query_key_value``) are skipped: chunking them would mix q, k and v.
The reference is used only when every parameter of the module belongs to the
projections found, so a residual LayerNorm or positional table never raises a false alarm.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import NamedTuple, Optional

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from shapecheck.projections import STYLES, Style, lookup


class Projections(NamedTuple):
    """(out_features, in_features) weights and biases; ``wo`` None means no output projection."""

    pattern: str
    wq: Tensor
    bq: Optional[Tensor]
    wk: Tensor
    bk: Optional[Tensor]
    wv: Tensor
    bv: Optional[Tensor]
    wo: Optional[Tensor]
    bo: Optional[Tensor]
    owned: frozenset[int]  # ids of the parameters these weights come from
    q_norm: Optional[nn.Module] = None  # qk-norm (Qwen3, Gemma3, OLMo-2): applied to q and k before the scores
    k_norm: Optional[nn.Module] = None


_QK_NORMS = (("q_norm", "k_norm"), ("query_norm", "key_norm"), ("q_layernorm", "k_layernorm"), ("norm_q", "norm_k"))


def with_qk_norms(module: nn.Module, proj: Projections) -> Projections:
    """``proj`` with the module's own query/key normalisations (a pair of norm submodules) where it has them."""
    for q_name, k_name in _QK_NORMS:
        q_norm, k_norm = getattr(module, q_name, None), getattr(module, k_name, None)
        if isinstance(q_norm, nn.Module) and isinstance(k_norm, nn.Module) and "norm" in type(q_norm).__name__.lower():
            owned = proj.owned | frozenset(id(p) for m in (q_norm, k_norm) for p in m.parameters())
            return proj._replace(q_norm=q_norm, k_norm=k_norm, owned=owned)
    return proj


def _normalise(norm: Optional[nn.Module], x: Tensor, heads: int) -> Tensor:
    """The module's own norm in float64 on (batch, seq, heads·d): over the whole width or per head, as its size says."""
    if norm is None:
        return x
    dtype = next((p.dtype for p in norm.parameters()), torch.float32)
    twin = copy.deepcopy(norm).double()
    if hasattr(twin, "eps") and twin.eps is None:  # torch's RMSNorm: eps of the dtype it runs in, not float64's
        twin.eps = torch.finfo(dtype).eps
    width = next((p.numel() for p in norm.parameters()), None) or getattr(norm, "normalized_shape", (x.size(-1),))[0]
    if width == x.size(-1):
        return twin(x)
    batch, seq, _ = x.shape
    return twin(x.view(batch, seq, -1, width)).view(batch, seq, -1)  # per head


def _linear(module: object) -> Optional[tuple[Tensor, Optional[Tensor], list[Tensor]]]:
    """(weight as (out, in), bias, parameters) of a Linear, a GPT-2 Conv1D, or a Sequential/ModuleList's first Linear."""
    if isinstance(module, (nn.Sequential, nn.ModuleList)):
        module = next((m for m in module if isinstance(m, nn.Linear)), None)
    if isinstance(module, nn.Linear):
        return module.weight, module.bias, list(module.parameters())
    if module is not None and type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return module.weight.t(), module.bias, list(module.parameters())  # Conv1D stores (in, out)
    return None


def _weight(found: object, raw: bool) -> Optional[tuple[Tensor, Optional[Tensor], list[Tensor]]]:
    """A projection module as ``_linear`` reads it or, where ``raw``, a bare (out, in) weight tensor (torch's packed weights)."""
    if isinstance(found, Tensor):
        return (found, None, [found]) if raw and found.dim() == 2 else None
    return _linear(found)


def _from_style(module: nn.Module, style: Style) -> Optional[Projections]:
    """q, k, v (all of them) and the output projection (unless the style may lack it) under ``style``'s names."""
    parts = [_weight(lookup(module, name), raw=bool(style.bias)) for name in style.qkv]
    if any(p is None for p in parts):
        return None
    out = next((o for o in (_linear(lookup(module, n)) for n in style.outputs if n not in style.residual) if o is not None), None)
    if out is None and not style.output_optional:
        return None
    params = [t for p in parts for t in p[2]] + (out[2] if out else [])  # type: ignore[index]
    if len(parts) == 1:  # one stacked [q; k; v] weight
        weight, bias, _ = parts[0]  # type: ignore[misc]
        if weight.size(0) % 3:
            return None
        weights, biases = weight.chunk(3), (bias.chunk(3) if bias is not None else (None, None, None))
    else:
        weights, biases = tuple(p[0] for p in parts), tuple(p[1] for p in parts)  # type: ignore[index]
    packed_bias = lookup(module, style.bias) if style.bias else None
    if isinstance(packed_bias, Tensor):  # torch's in_proj_bias: a third each for q, k and v
        biases, params = packed_bias.chunk(3), params + [packed_bias]
    (wq, wk, wv), (bq, bk, bv) = weights, biases
    pattern = style.pattern if out else style.pattern.split(" + ")[0]
    return Projections(pattern, wq, bq, wk, bk, wv, bv, out[0] if out else None, out[1] if out else None, frozenset(map(id, params)))


def find_projections(module: nn.Module) -> Optional[Projections]:
    """The first style in ``STYLES`` whose q/k/v weights can be read off ``module`` and that it matches, or None."""
    return next((p for p in (_from_style(module, s) for s in STYLES if s.verifiable) if p is not None), None)


def packed_candidates(module: nn.Module, heads: int, kv_heads: int, d_head: int) -> list[Projections]:
    """One Linear producing q, k and v of every head (its rows (heads + 2·kv_heads)·d_head) and the Linear back to the
    width, read the two ways real code packs them: stacked [q; k; v] split by the head counts (Phi-3, GPTBigCode's
    multi-query) and, with as many kv heads as heads, per head [q_h; k_h; v_h] (GPT-NeoX, Persimmon). With random
    weights both are correct attentions; the reference accepts either, never a mix (values from the key rows)."""
    found = [(n, lin) for n, m in module.named_children() if (lin := _linear(m)) is not None]
    q_rows, kv_rows = heads * d_head, kv_heads * d_head
    for name, (w, b, params) in found:
        if w.size(0) != q_rows + 2 * kv_rows:
            continue
        out = next(((n, lin) for n, lin in found if n != name and lin[0].shape == (w.size(1), q_rows)), None)
        if out is None:
            continue
        (ow, ob, oparams), owned = out[1], frozenset(map(id, params + out[1][2]))
        none3: tuple = (None, None, None)
        layouts = [("stacked", w.split([q_rows, kv_rows, kv_rows]), b.split([q_rows, kv_rows, kv_rows]) if b is not None else none3)]
        if kv_heads == heads:
            per, per_b = w.view(heads, 3, d_head, -1), (b.view(heads, 3, d_head) if b is not None else None)
            layouts.append(("per head", tuple(per[:, i].reshape(q_rows, -1) for i in range(3)),
                            tuple(per_b[:, i].reshape(-1) for i in range(3)) if per_b is not None else none3))
        return [Projections(f"{name} ({how} q/k/v) + {out[0]}", ws[0], bs[0], ws[1], bs[1], ws[2], bs[2], ow, ob, owned)
                for how, ws, bs in layouts]
    return []


def projections_named(module: nn.Module, q: str, k: str, v: str, o: str = "") -> Optional[Projections]:
    """Projections read from four named Linear submodules (found by data flow, ``shapecheck.testing.dataflow``)."""
    parts = [_linear(lookup(module, name)) for name in (q, k, v)]
    out = _linear(lookup(module, o)) if o else None
    if any(p is None for p in parts) or (o and out is None):
        return None
    (wq, bq, pq), (wk, bk, pk), (wv, bv, pv) = parts  # type: ignore[misc]
    params = pq + pk + pv + (out[2] if out else [])
    pattern = f"{q}/{k}/{v}" + (f" + {o}" if o else "") + " (by data flow)"
    return Projections(pattern, wq, bq, wk, bk, wv, bv, out[0] if out else None, out[1] if out else None, frozenset(map(id, params)))


def unexplained_parameters(module: nn.Module, proj: Projections) -> list[str]:
    """Names of trainable parameters outside the projections (they make the reference inapplicable)."""
    return [n for n, p in module.named_parameters() if p.requires_grad and id(p) not in proj.owned]


def _project(x: Tensor, w: Tensor, b: Optional[Tensor]) -> Tensor:
    y = x @ w.detach().double().t()  # (batch, seq, heads*d)
    return y if b is None else y + b.detach().double()


Rotary = Callable[[Tensor, str], Tensor]  # (q or k as (batch, heads, seq, d_k) float64, "q" | "k") -> rotated


def rotate_half(cos: Tensor, sin: Tensor) -> Rotary:
    """RoPE in the rotate-half layout on the first ``cos.size(-1)`` features (transformers; partial rotary as Phi)."""
    cos, sin = cos.double()[:, None], sin.double()[:, None]  # (batch, 1, seq, d_rot)

    def rotate(x: Tensor, _which: str) -> Tensor:
        d = cos.size(-1)
        part, rest = x[..., :d], x[..., d:]
        half = torch.cat([-part[..., d // 2:], part[..., : d // 2]], dim=-1)
        return torch.cat([part * cos + half * sin, rest], dim=-1)

    return rotate


def rotate_every_two(cos: Tensor, sin: Tensor) -> Rotary:
    """RoPE on adjacent feature pairs (2i, 2i+1) with real tables, each frequency twice in a row (GPT-J, Cohere)."""
    cos, sin = cos.double()[:, None], sin.double()[:, None]  # (batch, 1, seq, d_rot)

    def rotate(x: Tensor, _which: str) -> Tensor:
        d = cos.size(-1)
        part, rest = x[..., :d], x[..., d:]
        turned = torch.stack([-part[..., 1::2], part[..., ::2]], dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)
        return torch.cat([part * cos + turned * sin, rest], dim=-1)

    return rotate


def rotations_from_tables(first: Tensor, second: Tensor, first_is_cos: bool) -> list[Rotary]:
    """The RoPE conventions consistent with the (cos, sin) tables a module is given, decided from the tables' values.

    ``first_is_cos`` (the caller saw which table is 1 at position 0) fixes the order: transformers'
    Llama passes (cos, sin), GPT-J (sin, cos). The frequencies are read from the table (the first
    half of a rotate-half table, every other entry of an adjacent-pairs one, all of a half-width
    one) and both layouts built from them are returned: each is a correct RoPE (Su et al. 2021,
    eq. 34), and a module may re-expand its table either way (GPT-J, Cohere, Helium); a module
    mixing the layouts (features i and i + d/2 turned at different frequencies) matches neither.
    """
    cos, sin = (first, second) if first_is_cos else (second, first)
    cos, sin = cos.double(), sin.double()
    d = cos.size(-1)
    halves = d % 2 == 0 and torch.allclose(cos[..., : d // 2], cos[..., d // 2:]) and torch.allclose(sin[..., : d // 2], sin[..., d // 2:])
    pairs = d % 2 == 0 and torch.allclose(cos[..., ::2], cos[..., 1::2]) and torch.allclose(sin[..., ::2], sin[..., 1::2])
    if halves:  # each frequency once: the first half
        cos, sin = cos[..., : d // 2], sin[..., : d // 2]
    elif pairs:
        cos, sin = cos[..., ::2], sin[..., ::2]
    # Either layout of the same frequencies is a correct RoPE (a module may re-expand its table, as Helium does):
    return [rotate_half(torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)),
            rotate_every_two(cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1))]


def rotate_pairs(freqs_cis: Tensor) -> Rotary:
    """RoPE on adjacent feature pairs as complex numbers (Meta's Llama ``freqs_cis``, (seq, d_k / 2))."""
    freqs = freqs_cis.to(torch.complex128)[None, None]  # (1, 1, seq, d_k / 2)

    def rotate(x: Tensor, _which: str) -> Tensor:
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())  # (batch, heads, seq, d_k / 2)
        return torch.view_as_real(pairs * freqs).flatten(-2)

    return rotate


def as_scores(term: Tensor, batch: int, heads: int, seq_q: int, seq_k: int) -> Tensor:
    """A term added to the scores as (batch, heads, seq_q, seq_k) float64; RuntimeError when it does not fit."""
    term = term.double()
    if term.dim() == 3 and term.size(0) == batch * heads:  # (batch·heads, seq_q or 1, seq_k), BLOOM and torch's layout
        term = term.reshape(batch, heads, term.size(1), term.size(2))
    while term.dim() < 4:
        term = term[None]
    return term.expand(batch, heads, seq_q, seq_k)


def reference_attention(
    proj: Projections,
    heads: int,
    query: Float[Tensor, "batch seq_q d_model"],
    key: Float[Tensor, "batch seq_k d_model"],
    value: Float[Tensor, "batch seq_k d_model"],
    keep: Optional[Bool[Tensor, "batch seq_k"]] = None,
    causal: bool = False,
    *,
    scale: Optional[float] = None,
    rotary: Optional[Rotary] = None,
    window: Optional[int] = None,
    tiled: bool = False,
    softcap: Optional[float] = None,
    bias: Optional[Tensor] = None,
) -> Float[Tensor, "batch seq_q d_model"]:
    """softmax(s·QKᵀ)V in float64 with the module's own weights (Vaswani et al. 2017, eq. 1 and section 3.2.2).

    ``s`` is ``scale`` or 1/√d_k. Grouped key/value heads (fewer k/v rows than q rows) serve
    ``heads / kv_heads`` consecutive query heads each (Ainslie et al. 2023, GQA; transformers'
    ``repeat_kv`` order), or with ``tiled`` every kv_heads-th query head. ``rotary`` rotates q and k after the split; ``window`` keeps keys
    j with i − window < j ≤ i (with ``causal``); ``softcap`` c caps the scaled scores to c·tanh(scores / c) before the
    mask (Gemma 2, Team Gemma 2024, section 2); ``bias`` is added to the scaled scores (ALiBi, Press et al. 2022;
    T5's relative bias, Raffel et al. 2020, section 2.1), as the module made it: broadcastable to (batch, heads, seq_q,
    seq_k), or (batch·heads, seq_q or 1, seq_k).
    """
    batch, seq_q, seq_k = query.size(0), query.size(1), key.size(1)
    d_k = proj.wq.size(0) // heads
    q = _normalise(proj.q_norm, _project(query.double(), proj.wq, proj.bq), heads)
    q = q.view(batch, seq_q, heads, -1).transpose(1, 2)  # (batch, heads, seq_q, d_k)
    k = _normalise(proj.k_norm, _project(key.double(), proj.wk, proj.bk), heads)
    k = k.view(batch, seq_k, -1, d_k).transpose(1, 2)  # (batch, kv_heads, seq_k, d_k)
    v = _project(value.double(), proj.wv, proj.bv).view(batch, seq_k, k.size(1), -1).transpose(1, 2)  # (batch, kv_heads, seq_k, d_v)
    if rotary is not None:
        q, k = rotary(q, "q"), rotary(k, "k")
    group = heads // k.size(1)
    if tiled:  # kv head h % kv_heads serves query head h (einops' "(r h)", x-transformers)
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)  # (batch, heads, seq_k, d)
    else:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (batch, heads, seq_k, d)
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(d_k))  # (batch, heads, seq_q, seq_k)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if bias is not None:
        scores = scores + as_scores(bias, batch, heads, seq_q, seq_k)
    allowed = torch.ones(batch, 1, seq_q, seq_k, dtype=torch.bool)
    if keep is not None:
        allowed = allowed & keep[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(seq_q, seq_k, dtype=torch.bool).tril()
    if window is not None:
        allowed = allowed & torch.ones(seq_q, seq_k, dtype=torch.bool).triu(1 - window)
    probs = scores.masked_fill(~allowed, -math.inf).softmax(dim=-1)  # (batch, heads, seq_q, seq_k)
    out = (probs @ v).transpose(1, 2).reshape(batch, seq_q, -1)  # (batch, seq_q, heads*d_v)
    return out if proj.wo is None else _project(out, proj.wo, proj.bo)  # (batch, seq_q, d_model)
