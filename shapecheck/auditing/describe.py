"""What each recognised submodule is, as plain facts in ``Match.info`` (read by audit's formulas and report's rows).

- attention: ``h``, ``h_kv`` (grouped-query key/value heads, Ainslie et al. 2023), ``d_head``,
  ``bias`` (role -> has one, for q/k/v/o or the fused qkv), ``declared_bias`` and ``declared_by``
  (what the block's config or family says, ``conventions.py``), ``window`` (a sliding-window span, or None)
  and ``buckets`` (T5's relative position bias table: buckets × h, Raffel et al. 2020 section 2.1);
- attention, multi-head latent (parts q or q_a/q_b, kv_a, kv_b, o): ``latent``, ``h``, ``h_kv`` (= h), ``d_head``
  (d_nope + d_rope), ``r_q``, ``r_kv``, ``d_nope``, ``d_rope``, ``d_v``, ``bias`` per role;
- feed_forward: ``d_model``, ``d_ff``, ``gated`` (SwiGLU and other GLU variants, Shazeer 2020), ``expert``
  (its index inside a mixture of experts);
- norm: ``type`` (``LayerNorm``: gain and bias; ``RMSNorm``: gain only, Zhang & Sennrich 2019), ``width``;
- embedding: ``table`` (vocab | max_seq | segments | relative), ``rows``, ``width``, ``factorised_by``
  (ALBERT's E -> H projection, Lan et al. 2020 section 3.1);
- projection (a factorised embedding's E -> H map): ``d_in`` (E), ``d_out`` (H), ``factorises``;
- moe_router: ``experts``, ``d_model``, ``top_k`` (experts per token, when the block says); moe_experts: ``experts``, ``d_model``, ``d_ff``, ``gated``;
- head, pooler, linear: ``d_in``, ``d_out``, ``bias``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Optional

from torch import nn

from shapecheck.auditing.conventions import declared_biases
from shapecheck.vocabulary import CONSTRUCTOR_ROLES

if TYPE_CHECKING:
    from shapecheck.auditing.recognize import Match

_EXPERT_INDEX = re.compile(r"(?:^|\.)experts\.(\d+)(?:\.|$)")


def _table(path: str) -> str:
    last = path.rpartition(".")[2].lower()
    if "relative" in last:
        return "relative"
    if any(w in last for w in ("pos", "wpe")):
        return "max_seq"
    if any(w in last for w in ("type", "segment")):
        return "segments"
    return "vocab"


def _config(match: "Match", model: nn.Module) -> Any:
    return getattr(match.module, "config", None) or getattr(model, "config", None)


def _kv_heads(match: "Match", model: nn.Module, d_head: Optional[int]) -> Optional[int]:
    for owner in (match.module, _config(match, model)):
        for name in sorted(CONSTRUCTOR_ROLES["kv_heads"]):
            value = getattr(owner, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    k = match.parts.get("k")
    return k.d_out // d_head if k is not None and d_head and k.d_out % d_head == 0 else None


def _window(match: "Match", model: nn.Module) -> Optional[int]:
    for owner in (match.module, _config(match, model)):
        for name in sorted(CONSTRUCTOR_ROLES["window"]):
            value = getattr(owner, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _buckets(match: "Match", h: Optional[int]) -> dict[str, int]:
    table = getattr(match.module, "relative_attention_bias", None)
    return {"buckets": table.num_embeddings} if isinstance(table, nn.Embedding) and table.embedding_dim == h else {}


def _latent(match: "Match") -> dict[str, Any]:
    """Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, section 2.1), its widths read off its projections:
    ``r_q``/``r_kv`` (q_lora_rank, kv_lora_rank), ``d_nope`` and ``d_rope`` (each query/key head is d_nope wide from the
    latent plus d_rope of decoupled rotary key shared by all heads), ``d_v``; ``d_head`` = d_nope + d_rope."""
    parts, h = match.parts, match.heads
    kv_a, kv_b = parts["kv_a"], parts["kv_b"]
    q = parts.get("q") or parts["q_b"]
    if not h or q.d_out % h or kv_b.d_out % h:
        return {"h": h, "latent": False}
    d_rope, d_head = kv_a.d_out - kv_b.d_in, q.d_out // h
    d_nope = d_head - d_rope
    info = {"h": h, "h_kv": h, "d_head": d_head, "latent": d_nope > 0 and kv_b.d_out // h > d_nope,
            "r_kv": kv_b.d_in, "d_nope": d_nope, "d_rope": d_rope, "d_v": kv_b.d_out // h - d_nope,
            "bias": {role: p.has_bias for role, p in parts.items()}, "window": None}
    return {**info, **({"r_q": parts["q_a"].d_out} if "q_a" in parts else {})}


def _attention(match: "Match", model: nn.Module) -> dict[str, Any]:
    if "kv_a" in match.parts:
        return _latent(match)
    parts, h = match.parts, match.heads
    first = parts.get("q") or parts.get("qkv")
    width = first.d_out if first is not None and "q" in parts else (parts["o"].d_in if "o" in parts else None)
    d_head = width // h if h and width and width % h == 0 else None
    bias = {role: p.has_bias for role, p in parts.items() if role in ("q", "k", "v", "o", "qkv")}
    declared, by = declared_biases(match.module, _config(match, model))
    return {"h": h, "h_kv": _kv_heads(match, model, d_head) or h, "d_head": d_head, "bias": bias,
            "declared_bias": declared, "declared_by": by, "window": _window(match, model), **_buckets(match, h)}


def _feed_forward(match: "Match") -> dict[str, Any]:
    up, down = match.parts.get("up") or match.parts["gate_up"], match.parts["down"]
    gated = "gate" in match.parts or "gate_up" in match.parts  # gate_up: Phi-3's gate and up in one Linear, 2·d_ff wide
    info: dict[str, Any] = {"d_model": up.d_in, "d_ff": down.d_in, "gated": gated}
    index = _EXPERT_INDEX.search(match.path)
    if index:
        info["expert"] = int(index.group(1))
    return info


def _linear(match: "Match") -> dict[str, Any]:
    part = match.parts["linear"]
    return {"d_in": part.d_in, "d_out": part.d_out, "bias": part.has_bias}


def _model_width(matches: list["Match"]) -> Optional[int]:
    widths = Counter(p.d_in for m in matches if m.kind == "attention" for role, p in m.parts.items() if role in ("q", "qkv"))
    return widths.most_common(1)[0][0] if widths else None


def _factorise(matches: list["Match"], width: Optional[int]) -> None:
    """A Linear from the embeddings' width E != H to the model width H is the factorised embedding projection."""
    tables = [m for m in matches if m.kind == "embedding" and m.info.get("table") == "vocab" and m.info["width"] != width]
    for match in matches:
        if match.kind != "linear" or width is None or match.parts["linear"].d_out != width:
            continue
        fed = [t for t in tables if t.info["width"] == match.parts["linear"].d_in]
        if fed:
            match.kind = "projection"
            match.info["factorises"] = [t.path for t in fed]
            for table in fed:
                table.info["factorised_by"] = match.path


def _one(match: "Match", model: nn.Module) -> dict[str, Any]:
    if match.kind == "attention":
        return _attention(match, model)
    if match.kind == "feed_forward":
        return _feed_forward(match)
    if match.kind == "norm":
        widths = [p.numel() for _, p in match.params]
        return {"type": "LayerNorm" if len(widths) == 2 else "RMSNorm", "width": widths[0]}
    if match.kind == "embedding":
        table = match.params[0][1]
        return {"table": _table(match.path), "rows": int(table.shape[0]), "width": int(table.shape[-1])}
    if match.kind == "moe_router":
        weight = next(p for _, p in match.params if p.dim() == 2)
        return {"experts": int(weight.shape[0]), "d_model": int(weight.shape[1])}
    if match.kind in ("pooler", "head", "linear"):
        return _linear(match)
    return {}


def describe(model: nn.Module, matches: list["Match"]) -> list["Match"]:
    """Fill each match's ``info``; a Linear feeding a narrower embedding into the model width becomes a ``projection``."""
    for match in matches:
        match.info = {**_one(match, model), **match.info}
    _factorise(matches, _model_width(matches))
    return matches
