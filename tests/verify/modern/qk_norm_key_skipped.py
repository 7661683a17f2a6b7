"""qk-norm (Qwen3 / Gemma3 style): RMSNorm over each head's queries and keys before the scores.

The reference follows the module's own q_norm / k_norm; the bug normalises the queries only.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.q_norm, self.k_norm = nn.RMSNorm(self.head_dim), nn.RMSNorm(self.head_dim)

    def keys(self, k: Tensor) -> Tensor:
        return self.k_norm(k)

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        shape = (batch, seq, self.n_heads, self.head_dim)
        q = self.q_norm(self.q_proj(x).view(shape)).transpose(1, 2)  # (batch, heads, seq, head_dim)
        k = self.keys(self.k_proj(x).view(shape)).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        return self.o_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, -1))


class Attention(Fixed):
    def keys(self, k: Tensor) -> Tensor:
        return k  # BUG: the keys are never normalised
