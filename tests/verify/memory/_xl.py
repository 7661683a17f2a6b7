"""Transformer-XL style causal self-attention with a memory: forward(x, mems=None). Keys and values come from
[mems; x]; query i is token m + i, sees keys j <= m + i, with a learned bias per clipped relative distance."""
from typing import Optional

import torch
from torch import Tensor, nn


class XL(nn.Module):
    def __init__(self, d_model: int = 8, n_heads: int = 2, max_distance: int = 4):
        super().__init__()
        self.n_heads, self.d_head, self.max_distance = n_heads, d_model // n_heads, max_distance
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))
        self.o_proj = nn.Linear(d_model, d_model)
        self.distance_bias = nn.Embedding(max_distance + 1, n_heads)

    def split(self, x: Tensor) -> Tensor:  # (B, T, C) -> (B, nh, T, hs)
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_head).transpose(1, 2)

    def query_positions(self, n: int, m: int) -> Tensor:
        return torch.arange(m, m + n)  # the queries follow the memory

    def hidden(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:  # (n, m + n): True = a future key
        return k_pos[None, :] > q_pos[:, None]

    def forward(self, x: Tensor, mems: Optional[Tensor] = None) -> Tensor:
        B, n, C = x.shape
        m = 0 if mems is None else mems.size(1)
        h = x if mems is None else torch.cat([mems, x], dim=1)  # (B, m + n, C)
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(h)), self.split(self.v_proj(h))
        q_pos, k_pos = self.query_positions(n, m), torch.arange(m + n)
        distance = (q_pos[:, None] - k_pos[None, :]).clamp(0, self.max_distance)  # (n, m + n)
        scores = q @ k.transpose(-2, -1) * self.d_head ** -0.5 + self.distance_bias(distance).permute(2, 0, 1)
        scores = scores.masked_fill(self.hidden(q_pos, k_pos), float("-inf"))  # (B, nh, n, m + n)
        y = scores.softmax(dim=-1) @ v  # (B, nh, n, hs)
        return self.o_proj(y.transpose(1, 2).reshape(B, n, C))


class KVMems(XL):
    """``mems`` holding a (keys, values) cache of projected states, not hidden states."""

    def forward(self, x: Tensor, mems: Optional[tuple] = None) -> Tensor:
        B, n, C = x.shape
        k, v = self.split(self.k_proj(x)), self.split(self.v_proj(x))
        if mems is not None:
            k, v = torch.cat([mems[0], k], dim=2), torch.cat([mems[1], v], dim=2)  # (B, nh, m + n, hs)
        m = k.size(2) - n
        q_pos, k_pos = torch.arange(m, m + n), torch.arange(m + n)
        scores = (self.split(self.q_proj(x)) @ k.transpose(-2, -1) * self.d_head ** -0.5).masked_fill(self.hidden(q_pos, k_pos), float("-inf"))
        return self.o_proj((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, n, C))
