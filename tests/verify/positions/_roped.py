"""Causal attention that rotates q and k itself (RoPE, rotate-half, base 10000) at the caller's ``position_ids``,
with a (keys, values) tuple cache: forward(x, position_ids, past_key_value=None, use_cache=False)."""
from typing import Optional

import torch
from torch import Tensor, nn


def rope(x: Tensor, positions: Tensor) -> Tensor:  # x: (B, nh, T, hs), positions: (T,)
    half = x.size(-1) // 2
    inv = 1.0 / 10000 ** (torch.arange(half, dtype=torch.float32) / half)
    angles = positions.float()[:, None] * inv[None, :]  # (T, hs / 2)
    cos, sin = (f(torch.cat([angles, angles], -1)).to(x.dtype) for f in (torch.cos, torch.sin))  # (T, hs)
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


class Roped(nn.Module):
    def __init__(self, dim: int = 8, n_heads: int = 2):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(dim, dim, bias=False) for _ in range(4))

    def split(self, x: Tensor) -> Tensor:  # (B, T, C) -> (B, nh, T, hs)
        return x.view(x.size(0), x.size(1), self.n_heads, self.head_dim).transpose(1, 2)

    def keys(self, x: Tensor, positions: Tensor, past: Optional[Tensor]) -> tuple[Tensor, Tensor]:
        """(keys to attend to, keys to cache): rotated at their own positions before caching."""
        k = rope(self.split(self.wk(x)), positions)
        k = k if past is None else torch.cat([past, k], dim=2)
        return k, k

    def forward(self, x: Tensor, position_ids: Tensor, past_key_value: Optional[tuple] = None, use_cache: bool = False):
        B, T, C = x.shape
        positions = position_ids[0]  # (T,)
        q = rope(self.split(self.wq(x)), positions)  # (B, nh, T, hs)
        k, cached = self.keys(x, positions, None if past_key_value is None else past_key_value[0])
        v = self.split(self.wv(x))
        v = v if past_key_value is None else torch.cat([past_key_value[1], v], dim=2)  # (B, nh, S, hs)
        past = k.size(2) - T
        hidden = torch.ones(T, k.size(2), dtype=torch.bool).triu(1 + past)  # query i sees keys j <= past + i
        scores = (q @ k.transpose(-2, -1) * self.head_dim ** -0.5).masked_fill(hidden, float("-inf"))
        out = self.wo((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C))
        return (out, (cached, v)) if use_cache else out


class Absolute(Roped):
    """Absolute positions: a sinusoid of each position added to the input, no rotation."""

    def forward(self, x: Tensor, position_ids: Tensor, past_key_value: Optional[tuple] = None, use_cache: bool = False):
        x = x + torch.sin(position_ids[0].to(x.dtype))[None, :, None]  # (B, T, C)
        return super().forward(x, torch.zeros_like(position_ids), past_key_value, use_cache)
