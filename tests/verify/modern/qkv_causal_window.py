"""A causal sliding-window attention called as forward(q, k, v), the three being one sequence (xformers' style).

It refuses keys of another length (its band mask is built for the query length), so verify treats it as
self-attention and the window is checked; the bug keeps one key too many.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, dim_model: int, num_heads: int, window_size: int = 2) -> None:
        super().__init__()
        self.num_heads, self.head_dim, self.window_size = num_heads, dim_model // num_heads, window_size
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim_model, dim_model) for _ in range(4))

    def band(self, seq: int) -> Tensor:
        i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
        return (j <= i) & (j > i - self.window_size)  # (seq, seq)

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        batch, seq, _ = q.shape
        q, k, v = (p(t).view(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
                   for p, t in ((self.q_proj, q), (self.k_proj, k), (self.v_proj, v)))
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        scores = scores.masked_fill(~self.band(seq), torch.finfo(scores.dtype).min)  # needs seq_k == seq
        return self.out_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, -1))


class Attention(Fixed):
    def band(self, seq: int) -> Tensor:
        i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
        return (j <= i) & (j >= i - self.window_size)  # BUG: window + 1 keys
