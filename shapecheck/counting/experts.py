"""Mixture-of-experts blocks counted on meta under a stated routing assumption: each token goes to k experts.

Routing is data-dependent (which expert a token goes to needs real values; transformers'
experts call ``nonzero``, which the meta device cannot answer). While counting, each
recognised experts module runs instead one expert on the k·T (token, expert) pairs:
the same matmuls, FLOPs and backward as any routing that sends every token to k experts.
The router itself runs as written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

ROUTING = "each token is sent to k experts (top-k routing); expert FLOPs = k × one expert's per token"


def _pairs(hidden: torch.Tensor, k: int) -> torch.Tensor:
    flat = hidden.reshape(-1, hidden.shape[-1])
    return flat.repeat(k, 1)


def _module_list_forward(experts: nn.ModuleList, k: int):
    def forward(hidden: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        out = experts[0](_pairs(hidden, k))
        return out.reshape(k, -1, out.shape[-1]).sum(0).reshape(hidden.shape[:-1] + out.shape[-1:])

    return forward


def _stacked_forward(experts: nn.Module, k: int):
    """transformers' 3-D expert weights: gate_up_proj (E, 2·d_ff, d_model), down_proj (E, d_model, d_ff)."""
    act = getattr(experts, "act_fn", F.silu)

    def forward(hidden: torch.Tensor, top_k_index: Any = None, top_k_weights: Any = None, *_: Any, **__: Any) -> torch.Tensor:
        tokens = _pairs(hidden, k)
        gate, up = F.linear(tokens, experts.gate_up_proj[0]).chunk(2, dim=-1)
        out = F.linear(act(gate) * up, experts.down_proj[0]).reshape(k, -1, hidden.shape[-1])
        if isinstance(top_k_weights, torch.Tensor):  # weighted by the router, so its backward runs as in training
            out = out * top_k_weights.reshape(-1, k).t().unsqueeze(-1).to(out.dtype)
        return out.sum(0).reshape(hidden.shape)

    return forward


@contextlib.contextmanager
def routed(blocks: dict[nn.Module, int]) -> Iterator[None]:
    """While inside, each MoE block's experts (``block.experts``) follow the routing assumption with its k."""
    patched = []
    for block, k in blocks.items():
        experts = block.experts
        if isinstance(experts, nn.ModuleList):
            experts_call = _module_list_forward(experts, k)
            target = block  # a ModuleList has no forward: the block routes itself
            patched.append((target, _block_forward(block, experts_call)))
        else:
            patched.append((experts, _stacked_forward(experts, k)))
    for module, forward in patched:
        module.forward = forward  # an instance attribute: nn.Module.__call__ finds it first
    try:
        yield
    finally:
        for module, _ in patched:
            del module.forward


def _block_forward(block: nn.Module, experts_call: Any):
    """A block holding a ModuleList of experts: its router (``gate``/``router``) runs, then the k·T pairs."""
    router = getattr(block, "gate", None) or getattr(block, "router", None)

    def forward(hidden: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
        if router is not None:
            router(hidden.reshape(-1, hidden.shape[-1]))
        return experts_call(hidden)

    return forward
