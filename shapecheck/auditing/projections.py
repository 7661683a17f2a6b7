"""A uniform view of a projection: ``nn.Linear``, GPT-2's ``Conv1D``, or raw packed weights.

    >>> view = as_projection("attn.c_attn", gpt2_block.attn.c_attn)
    >>> view.d_in, view.d_out, view.bias is not None
    (768, 2304, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torch import nn


@dataclass(frozen=True)
class Projection:
    """One affine map: ``weight`` (d_out × d_in) and an optional ``bias`` (d_out), by parameter name."""

    name: str  # path relative to the block, e.g. "self.query", "in_proj_weight"
    d_in: int
    d_out: int
    params: tuple[tuple[str, nn.Parameter], ...]  # (path relative to the block, parameter)
    has_bias: bool

    @property
    def numel(self) -> int:
        return sum(p.numel() for _, p in self.params)


def _linear_leaf(module: object) -> Optional[nn.Module]:
    """The module itself when it is a Linear or Conv1D, or the first one inside a Sequential/ModuleList."""
    if isinstance(module, (nn.Sequential, nn.ModuleList)):
        return next((m for m in module if is_linear(m)), None)
    return module if is_linear(module) else None


def is_linear(module: object) -> bool:
    """``nn.Linear`` (and subclasses) or a transformers/GPT-2 ``Conv1D`` (weight stored as (in, out))."""
    if isinstance(module, nn.Linear):
        return True
    return type(module).__name__ == "Conv1D" and hasattr(module, "nf") and isinstance(getattr(module, "weight", None), nn.Parameter)


def as_projection(name: str, module: object) -> Optional[Projection]:
    """The projection ``module`` holds (a Linear, a Conv1D, or a container's first Linear), or None."""
    leaf = _linear_leaf(module)
    if leaf is None:
        return None
    prefix = name if leaf is module else f"{name}.{_index_of(module, leaf)}"
    weight, bias = leaf.weight, getattr(leaf, "bias", None)
    d_out, d_in = weight.shape if isinstance(leaf, nn.Linear) else (weight.shape[1], weight.shape[0])
    params = [(f"{prefix}.weight", weight)] + ([(f"{prefix}.bias", bias)] if isinstance(bias, nn.Parameter) else [])
    return Projection(prefix, int(d_in), int(d_out), tuple(params), isinstance(bias, nn.Parameter))


def _index_of(container: object, leaf: nn.Module) -> str:
    for key, child in container.named_children():  # type: ignore[attr-defined]
        if child is leaf:
            return key
    return "0"


def packed_projection(
    name: str, weight: Optional[nn.Parameter], bias: Optional[nn.Parameter], bias_name: str = "in_proj_bias"
) -> Optional[Projection]:
    """torch's ``in_proj_weight`` (3·d_model × d_model) and ``in_proj_bias`` as one fused projection."""
    if not isinstance(weight, nn.Parameter) or weight.dim() != 2:
        return None
    params = [(name, weight)] + ([(bias_name, bias)] if isinstance(bias, nn.Parameter) else [])
    return Projection(name, int(weight.shape[1]), int(weight.shape[0]), tuple(params), isinstance(bias, nn.Parameter))
