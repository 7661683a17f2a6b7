"""A decoder whose causality is a constructor flag (default off, as xformers' and many tutorials' are).

``--causal`` must build it with causal=True; built non-causal, the correct module would be reported as
failing causality. The bug: the flag is stored but the triangle keeps one future key (tril(1)).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool = False) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.causal = n_heads, d_model // n_heads, causal
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def triangle(self, seq: int) -> Tensor:
        return torch.ones(seq, seq, dtype=torch.bool).tril()

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        q, k, v = (p(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        if self.causal:
            scores = scores.masked_fill(~self.triangle(seq), torch.finfo(scores.dtype).min)
        out = scores.softmax(dim=-1) @ v  # (batch, heads, seq, head_dim)
        return self.out_proj(out.transpose(1, 2).reshape(batch, seq, -1))


class Attention(Fixed):
    def triangle(self, seq: int) -> Tensor:
        return torch.ones(seq, seq, dtype=torch.bool).tril(1)  # BUG: one future key visible
