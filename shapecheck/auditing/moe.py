"""Mixture-of-experts layers: the router and the experts (Shazeer et al. 2017; Mixtral, Jiang et al. 2024).

A block is a mixture of experts when it holds ``experts`` and a router (``gate``
or ``router``). The router is a Linear, or a module with one (n_experts × d_model)
weight (transformers' ``MixtralTopKRouter``). The experts are a ModuleList of
feed-forward blocks (each recognised as a feed-forward match, tagged with its
index) or grouped 3-D weights: transformers' ``gate_up_proj`` (n_experts ×
2·d_ff × d_model) and ``down_proj`` (n_experts × d_model × d_ff).
"""

from __future__ import annotations

from typing import Any, Optional

from torch import nn

ROUTER_NAMES = ("gate", "router")
TOP_K_NAMES = ("top_k", "num_experts_per_tok", "k")  # experts each token is routed to


def top_k(block: nn.Module) -> Optional[int]:
    """The experts per token a mixture-of-experts block (or its router) stores, or None."""
    for owner in (block, *(getattr(block, name, None) for name in ROUTER_NAMES)):
        for name in TOP_K_NAMES:
            value = getattr(owner, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _router(block: nn.Module) -> Optional[tuple[str, nn.Module]]:
    for name in ROUTER_NAMES:
        child = getattr(block, name, None)
        if isinstance(child, nn.Module):
            weights = [p for p in child.parameters(recurse=True) if p.dim() == 2]
            if len(weights) == 1:
                return name, child
    return None


def moe_parts(block: nn.Module) -> Optional[tuple[str, nn.Module, nn.Module]]:
    """(router name, router, experts) when ``block`` is a mixture-of-experts layer."""
    experts = getattr(block, "experts", None)
    router = _router(block)
    if not isinstance(experts, nn.Module) or router is None:
        return None
    return router[0], router[1], experts


def grouped_expert_info(experts: nn.Module) -> Optional[dict[str, Any]]:
    """``{"experts": n, "d_model": d, "d_ff": f, "gated": bool}`` for 3-D grouped expert weights, else None."""
    weights = {name: p for name, p in experts.named_parameters(recurse=False) if p.dim() == 3}
    down = weights.get("down_proj")
    up = weights.get("gate_up_proj") if "gate_up_proj" in weights else weights.get("up_proj")
    if down is None or up is None:
        return None
    n, a, b = down.shape
    upper = set(up.shape[1:])
    d_model, d_ff = (a, b) if a in upper else (b, a)
    gated = "gate_up_proj" in weights or "gate_proj" in weights
    return {"experts": int(n), "d_model": int(d_model), "d_ff": int(d_ff), "gated": gated}
