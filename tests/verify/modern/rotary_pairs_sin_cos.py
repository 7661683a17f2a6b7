"""GPT-J-style rotary: (sin, cos) in that order, half-width tables, adjacent feature pairs rotate together.

The caller computes the tables with the module's ``SinCosRotaryEmbedding`` (as transformers 5.24's
GPT-J does); the module repeats each frequency twice in a row and rotates pairs (2i, 2i+1).
The bug mixes the conventions: pairs-expanded tables with a rotate-half rotation, so features
i and i + d/2 turn at different frequencies and the rotation no longer encodes relative positions.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor, nn


class SinCosRotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim), persistent=False)

    def forward(self, x: Tensor, position_ids: Tensor) -> tuple[Tensor, Tensor]:
        angles = position_ids[..., None].float() * self.inv_freq  # (batch, seq, head_dim / 2)
        return angles.sin().to(x.dtype), angles.cos().to(x.dtype)


def every_two(x: Tensor) -> Tensor:
    return torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)


def rotate_half(x: Tensor) -> Tensor:
    half = x.size(-1) // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Fixed(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.rotary_emb = SinCosRotaryEmbedding(self.head_dim)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim, dim, bias=False) for _ in range(4))

    def rotate(self, x: Tensor, sin: Tensor, cos: Tensor) -> Tensor:
        sin, cos = sin.repeat_interleave(2, -1)[:, None], cos.repeat_interleave(2, -1)[:, None]  # (batch, 1, seq, head_dim)
        return x * cos + every_two(x) * sin

    def forward(self, hidden_states: Tensor, position_embeddings: tuple[Tensor, Tensor],
                attention_mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, _ = hidden_states.shape
        sin, cos = position_embeddings
        q, k, v = (p(hidden_states).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))  # (batch, heads, seq, head_dim)
        q, k = self.rotate(q, sin, cos), self.rotate(k, sin, cos)
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        allowed = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        out = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min).softmax(-1) @ v  # (batch, heads, seq, head_dim)
        return self.out_proj(out.transpose(1, 2).reshape(batch, seq, -1))


class Attention(Fixed):
    def rotate(self, x: Tensor, sin: Tensor, cos: Tensor) -> Tensor:
        sin, cos = sin.repeat_interleave(2, -1)[:, None], cos.repeat_interleave(2, -1)[:, None]
        return x * cos + rotate_half(x) * sin  # BUG: pairs-expanded tables, rotate-half rotation
