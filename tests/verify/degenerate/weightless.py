"""Attention without weights (softmax(x xᵀ/√d) x) next to modules that only look like attention.

``Attention`` is correct and has no parameters: ``gradients`` must skip it, not fail it. The others
are degenerate in the ways a broken module is: it returns its input, ignores it, or averages
the keys with uniform weights (causal or not).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool = False) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal

    def weights(self, x: Tensor) -> Tensor:
        scores = x @ x.transpose(-2, -1) / self.d_model ** 0.5  # (batch, seq, seq)
        if self.causal:
            seq = x.size(1)
            scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), torch.finfo(x.dtype).min)
        return scores.softmax(dim=-1)

    def forward(self, x: Tensor) -> Tensor:
        return self.weights(x) @ x  # (batch, seq, d_model)


class ReturnsInput(Attention):
    def forward(self, x: Tensor) -> Tensor:
        return x.clone()  # BUG: the attention step was lost in a refactor


class IgnoresInput(Attention):
    def forward(self, x: Tensor) -> Tensor:
        return torch.zeros_like(x)  # BUG: a placeholder left in


class Uniform(Attention):
    def weights(self, x: Tensor) -> Tensor:
        seq = x.size(1)
        allowed = torch.ones(seq, seq, dtype=x.dtype).tril() if self.causal else torch.ones(seq, seq, dtype=x.dtype)
        return (allowed / allowed.sum(-1, keepdim=True)).expand(x.size(0), -1, -1)  # BUG: scores never computed


class CausalUniform(Uniform):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads, causal=True)


class CausalAttention(Attention):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__(d_model, n_heads, causal=True)
