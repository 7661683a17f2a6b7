"""What each submodule of any model is, for counting: attention (h, h_kv, d_head), MLP pair or gated triple, MoE, norm, embedding, linear.

A small recogniser kept here, separate from audit's (``shapecheck.auditing.recognize``),
because counting needs what audit's does not read yet: the kv heads of GQA/MQA, a head
size independent of d_model/h, gated (SwiGLU/GeGLU) triples, RMSNorm and mixture-of-experts
blocks (a router and E experts, as a ModuleList or as transformers' 3-D expert weights).
Attention projection names come from the one table, ``shapecheck.projections.STYLES``.
Each ``Part`` holds the sizes its closed form (``shapecheck.counting.closed_forms``) needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from torch import nn

from shapecheck.auditing.projections import Projection, as_projection, is_linear
from shapecheck.projections import STYLES, lookup

HEAD_ATTRS = ("num_heads", "num_attention_heads", "n_heads", "n_head", "heads", "h")
KV_HEAD_ATTRS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "kv_heads", "n_kv_head")
HEAD_DIM_ATTRS = ("head_dim", "d_head", "attention_head_size", "head_size", "d_k", "key_value_proj_dim")
WINDOW_ATTRS = ("sliding_window", "window", "window_size")
TOP_K_ATTRS = ("top_k", "num_experts_per_tok", "k")
GATE_NAMES = ("gate_proj", "w1", "wi_0", "gate")
UP_NAMES = ("up_proj", "w3", "wi_1", "up")
DOWN_NAMES = ("down_proj", "w2", "wo", "down")


@dataclass(frozen=True)
class Part:
    """A recognised module: its kind and the sizes its formula reads (``d_model``, ``h``, ``h_kv`` ...)."""

    kind: str  # attention | mlp | gated_mlp | moe | norm | embedding | linear
    sizes: dict[str, int] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)  # bias, rms, window, experts_layout

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes.items())


def _int_attr(objects: tuple[Any, ...], names: tuple[str, ...]) -> Optional[int]:
    for obj in objects:
        for name in names:
            value = getattr(obj, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _holders(module: nn.Module) -> tuple[Any, ...]:
    return (module, getattr(module, "config", None))


def _projections(module: nn.Module) -> Optional[dict[str, Projection]]:
    """q, k, v, o projections (three names or one fused), by the one table of names."""
    for style in STYLES:
        if style.bias:  # torch's packed nn.MultiheadAttention: measured row only
            continue
        found = {role: as_projection(name, lookup(module, name)) for role, name in zip("qkv", style.qkv)}
        if any(p is None for p in found.values()):
            continue
        out = next((p for name in style.outputs if (p := as_projection(name, lookup(module, name))) is not None), None)
        if out is not None:
            found["o"] = out
        return found  # type: ignore[return-value]
    return None


def attention(module: nn.Module) -> Optional[Part]:
    """An attention block with separate q/k/v projections: h from its attributes, h_kv and d_head from shapes."""
    projections = _projections(module)
    if projections is None or "k" not in projections:
        return None
    q, k = projections["q"], projections["k"]
    h = _int_attr(_holders(module), HEAD_ATTRS)
    d_head = _int_attr(_holders(module), HEAD_DIM_ATTRS) or (q.d_out // h if h and q.d_out % h == 0 else None)
    if not h or not d_head or q.d_out != h * d_head or k.d_out % d_head:
        return None
    sizes = {"d_model": q.d_in, "h": h, "h_kv": k.d_out // d_head, "d_head": d_head}
    if "o" in projections:
        sizes["d_out"] = projections["o"].d_out
    bias_table = getattr(module, "relative_attention_bias", None)  # T5 (Raffel et al. 2020, 2.1): buckets × h
    if isinstance(bias_table, nn.Embedding) and bias_table.embedding_dim == h:
        sizes["buckets"] = bias_table.num_embeddings
    window = _int_attr(_holders(module), WINDOW_ATTRS)
    flags = {"bias": {role: p.has_bias for role, p in projections.items()}, "window": window,
             "relative": "buckets" in sizes}
    return Part("attention", sizes, flags)


def _first(module: nn.Module, names: tuple[str, ...]) -> Optional[Projection]:
    return next((p for name in names if (p := as_projection(name, getattr(module, name, None))) is not None), None)


def _only(module: nn.Module, projections: Any) -> bool:
    """``module`` holds no parameters besides those of ``projections`` (a layer with attention is no MLP)."""
    return sum(p.numel() for p in module.parameters()) == sum(p.numel for p in projections)


def gated_mlp(module: nn.Module) -> Optional[Part]:
    """gate, up (d -> d_ff) and down (d_ff -> d): SwiGLU / GeGLU (Shazeer 2020)."""
    gate, up, down = _first(module, GATE_NAMES), _first(module, UP_NAMES), _first(module, DOWN_NAMES)
    if gate is None or up is None or down is None:
        return None
    if not (gate.d_in == up.d_in == down.d_out and gate.d_out == up.d_out == down.d_in):
        return None
    if not _only(module, (gate, up, down)):
        return None
    return Part("gated_mlp", {"d_model": gate.d_in, "d_ff": gate.d_out}, {"bias": gate.has_bias})


def mlp(module: nn.Module) -> Optional[Part]:
    """Exactly two linear children, d -> d_ff -> d (fc1/fc2, c_fc/c_proj, linear1/linear2 ...)."""
    linears = [as_projection(n, c) for n, c in module.named_children() if is_linear(c)]
    if len(linears) != 2 or any(p is None for p in linears):
        return None
    up, down = linears
    if up.d_in != down.d_out or up.d_out != down.d_in or up.d_in == up.d_out or not _only(module, linears):
        return None
    return Part("mlp", {"d_model": up.d_in, "d_ff": up.d_out}, {"bias": up.has_bias})


def moe(module: nn.Module) -> Optional[Part]:
    """A router over E experts, each token sent to k of them: experts as a ModuleList or as 3-D weights."""
    experts = getattr(module, "experts", None)
    k = _int_attr((module, getattr(module, "gate", None), getattr(module, "router", None)), TOP_K_ATTRS)
    if experts is None or not k:
        return None
    if isinstance(experts, nn.ModuleList) and len(experts) and (inner := gated_mlp(experts[0]) or mlp(experts[0])):
        return Part("moe", {**inner.sizes, "E": len(experts), "k": k}, {"expert": inner.kind})
    gate_up, down = getattr(experts, "gate_up_proj", None), getattr(experts, "down_proj", None)
    if isinstance(gate_up, nn.Parameter) and isinstance(down, nn.Parameter) and gate_up.dim() == 3:
        n_experts, two_ff, d_model = gate_up.shape
        return Part("moe", {"d_model": d_model, "d_ff": two_ff // 2, "E": n_experts, "k": k}, {"expert": "gated_mlp"})
    return None


def norm(module: nn.Module) -> Optional[Part]:
    """LayerNorm (weight and bias) or RMSNorm (weight only), by class name, over the last axis."""
    name = type(module).__name__
    if "Norm" not in name or "Batch" in name or "Group" in name:
        return None
    weight = getattr(module, "weight", None)
    if not isinstance(weight, nn.Parameter) or weight.dim() != 1:
        return None
    rms = "RMS" in name or getattr(module, "bias", None) is None
    return Part("norm", {"d_model": weight.shape[0]}, {"rms": rms})


def embedding(module: nn.Module) -> Optional[Part]:
    if isinstance(module, nn.Embedding):
        return Part("embedding", {"rows": module.num_embeddings, "d_model": module.embedding_dim})
    return None


def linear(module: nn.Module) -> Optional[Part]:
    projection = as_projection("", module) if is_linear(module) else None
    if projection is None:
        return None
    return Part("linear", {"d_in": projection.d_in, "d_out": projection.d_out}, {"bias": projection.has_bias})


RECOGNISERS = (moe, attention, gated_mlp, mlp, norm, embedding, linear)


def recognise(module: nn.Module) -> Optional[Part]:
    """The first recogniser that claims ``module`` (MoE before attention before MLPs), or None."""
    for check in RECOGNISERS:
        part = check(module)
        if part is not None:
            return part
    return None
