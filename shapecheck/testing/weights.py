"""Projection weights found by name, and the float64 reference attention built from them.

Patterns, tried in order (attribute names on the module itself):
(q_proj, k_proj, v_proj, out_proj | o_proj); (query, key, value [+ dense | output.dense]);
torch's packed ``in_proj_weight``/``in_proj_bias`` + ``out_proj``; GPT-2's fused
``c_attn`` + ``c_proj`` (Linear or Conv1D); ``qkv`` + ``proj``; (to_q, to_k, to_v, to_out);
(wq, wk, wv, wo); seed 001's ``linear_layers[0..2]`` + ``output_layer``.
The reference is used only when every parameter of the module belongs to the
projections found, so a residual LayerNorm or positional table never raises a false alarm.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn


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


def _linear(module: object) -> Optional[tuple[Tensor, Optional[Tensor], list[Tensor]]]:
    """(weight as (out, in), bias, parameters) of a Linear, a GPT-2 Conv1D, or a Sequential's first Linear."""
    if isinstance(module, nn.Sequential):
        module = next((m for m in module if isinstance(m, nn.Linear)), None)
    if isinstance(module, nn.Linear):
        return module.weight, module.bias, list(module.parameters())
    if module is not None and type(module).__name__ == "Conv1D" and hasattr(module, "nf"):
        return module.weight.t(), module.bias, list(module.parameters())  # Conv1D stores (in, out)
    return None


def _separate(module: nn.Module, names: tuple[str, str, str], out_names: tuple[str, ...], pattern: str, allow_no_out: bool = False) -> Optional[Projections]:
    parts = [_linear(getattr(module, n, None)) for n in names]
    if any(p is None for p in parts):
        return None
    out = next((o for o in (_linear(_get(module, n)) for n in out_names) if o is not None), None)
    if out is None and not allow_no_out:
        return None
    params = [t for p in parts for t in p[2]] + (out[2] if out else [])
    (wq, bq, _), (wk, bk, _), (wv, bv, _) = parts  # type: ignore[misc]
    return Projections(pattern, wq, bq, wk, bk, wv, bv, out[0] if out else None, out[1] if out else None, frozenset(map(id, params)))


def _get(module: nn.Module, dotted: str) -> object:
    for part in dotted.split("."):
        module = getattr(module, part, None)  # type: ignore[assignment]
        if module is None:
            return None
    return module


def _packed(module: nn.Module) -> Optional[Projections]:
    weight = getattr(module, "in_proj_weight", None)
    out = _linear(getattr(module, "out_proj", None))
    if not isinstance(weight, Tensor) or out is None:
        return None
    bias = getattr(module, "in_proj_bias", None)
    wq, wk, wv = weight.chunk(3)
    bq, bk, bv = bias.chunk(3) if isinstance(bias, Tensor) else (None, None, None)
    params = [weight] + ([bias] if isinstance(bias, Tensor) else []) + out[2]
    return Projections("in_proj_weight + out_proj", wq, bq, wk, bk, wv, bv, out[0], out[1], frozenset(map(id, params)))


def _fused(module: nn.Module, qkv_name: str, out_name: str) -> Optional[Projections]:
    qkv, out = _linear(getattr(module, qkv_name, None)), _linear(getattr(module, out_name, None))
    if qkv is None or out is None or qkv[0].size(0) % 3:
        return None
    wq, wk, wv = qkv[0].chunk(3)
    bq, bk, bv = qkv[1].chunk(3) if qkv[1] is not None else (None, None, None)
    return Projections(f"{qkv_name} + {out_name}", wq, bq, wk, bk, wv, bv, out[0], out[1], frozenset(map(id, qkv[2] + out[2])))


def _seed001(module: nn.Module) -> Optional[Projections]:
    layers, out = getattr(module, "linear_layers", None), _linear(getattr(module, "output_layer", None))
    if not isinstance(layers, (nn.ModuleList, nn.Sequential)) or len(layers) != 3 or out is None:
        return None
    parts = [_linear(m) for m in layers]
    if any(p is None for p in parts):
        return None
    params = [t for p in parts for t in p[2]] + out[2]  # type: ignore[index]
    (wq, bq, _), (wk, bk, _), (wv, bv, _) = parts  # type: ignore[misc]
    return Projections("linear_layers[0..2] + output_layer", wq, bq, wk, bk, wv, bv, out[0], out[1], frozenset(map(id, params)))


def find_projections(module: nn.Module) -> Optional[Projections]:
    """The first pattern that matches ``module``'s attributes, or None."""
    finders = (
        lambda m: _separate(m, ("q_proj", "k_proj", "v_proj"), ("out_proj", "o_proj"), "q_proj/k_proj/v_proj + out_proj"),
        lambda m: _separate(m, ("query", "key", "value"), ("dense", "output.dense", "output"), "query/key/value", allow_no_out=True),
        _packed,
        lambda m: _fused(m, "c_attn", "c_proj"),
        lambda m: _fused(m, "qkv", "proj"),
        lambda m: _separate(m, ("to_q", "to_k", "to_v"), ("to_out",), "to_q/to_k/to_v + to_out"),
        lambda m: _separate(m, ("wq", "wk", "wv"), ("wo",), "wq/wk/wv + wo"),
        _seed001,
    )
    return next((p for p in (f(module) for f in finders) if p is not None), None)


def unexplained_parameters(module: nn.Module, proj: Projections) -> list[str]:
    """Names of trainable parameters outside the projections (they make the reference inapplicable)."""
    return [n for n, p in module.named_parameters() if p.requires_grad and id(p) not in proj.owned]


def _project(x: Tensor, w: Tensor, b: Optional[Tensor]) -> Tensor:
    y = x @ w.detach().double().t()  # (batch, seq, heads*d)
    return y if b is None else y + b.detach().double()


def reference_attention(
    proj: Projections,
    heads: int,
    query: Float[Tensor, "batch seq_q d_model"],
    key: Float[Tensor, "batch seq_k d_model"],
    value: Float[Tensor, "batch seq_k d_model"],
    keep: Optional[Bool[Tensor, "batch seq_k"]] = None,
    causal: bool = False,
) -> Float[Tensor, "batch seq_q d_model"]:
    """softmax(QKᵀ/√d_k)V in float64 with the module's own weights (Vaswani et al. 2017, eq. 1 and section 3.2.2)."""
    batch, seq_q, seq_k = query.size(0), query.size(1), key.size(1)
    q = _project(query.double(), proj.wq, proj.bq).view(batch, seq_q, heads, -1).transpose(1, 2)  # (batch, heads, seq_q, d_k)
    k = _project(key.double(), proj.wk, proj.bk).view(batch, seq_k, heads, -1).transpose(1, 2)  # (batch, heads, seq_k, d_k)
    v = _project(value.double(), proj.wv, proj.bv).view(batch, seq_k, heads, -1).transpose(1, 2)  # (batch, heads, seq_k, d_v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (batch, heads, seq_q, seq_k)
    allowed = torch.ones(batch, 1, seq_q, seq_k, dtype=torch.bool)
    if keep is not None:
        allowed = allowed & keep[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(seq_q, seq_k, dtype=torch.bool).tril()
    probs = scores.masked_fill(~allowed, -math.inf).softmax(dim=-1)  # (batch, heads, seq_q, seq_k)
    out = (probs @ v).transpose(1, 2).reshape(batch, seq_q, -1)  # (batch, seq_q, heads*d_v)
    return out if proj.wo is None else _project(out, proj.wo, proj.bo)  # (batch, seq_q, d_model)
