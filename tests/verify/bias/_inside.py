"""Attention whose position bias is made inside forward: ALiBi from a buffer of slopes (causal, Press et al. 2022) and a
T5-style table of learned biases per clipped relative distance (bidirectional). forward(x) only."""
import math

import torch
from torch import Tensor, nn


class _Heads(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))
        self.o_proj = nn.Linear(d_model, d_model)

    def split(self, x: Tensor) -> Tensor:  # (B, T, C) -> (B, nh, T, hs)
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_head).transpose(1, 2)

    def merge(self, y: Tensor) -> Tensor:  # (B, nh, T, hs) -> (B, T, C)
        return y.transpose(1, 2).reshape(y.size(0), y.size(2), -1)

    def scale(self) -> float:
        return self.d_head ** -0.5

    def bias(self, seq: int) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) * self.scale() + self.bias(x.size(1))  # (B, nh, T, T)
        return self.o_proj(self.merge(scores.softmax(dim=-1) @ v))


class Alibi(_Heads):
    def __init__(self, d_model: int = 8, n_heads: int = 2):
        super().__init__(d_model, n_heads)
        slopes = [2 ** (-8 * (h + 1) / n_heads) for h in range(n_heads)]
        self.register_buffer("slopes", torch.tensor(slopes), persistent=False)

    def bias(self, seq: int) -> Tensor:  # (nh, T, T): −slope·distance to past keys, −inf on future ones
        i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
        distance = (j - i).to(self.slopes.dtype).masked_fill(j > i, -math.inf)
        return self.slopes[:, None, None] * distance


class RelativeTable(_Heads):
    def __init__(self, d_model: int = 8, n_heads: int = 2, max_distance: int = 3):
        super().__init__(d_model, n_heads)
        self.max_distance = max_distance
        self.rel_bias = nn.Embedding(2 * max_distance + 1, n_heads)

    def bias(self, seq: int) -> Tensor:  # (nh, T, T): a learned bias per clipped relative distance
        i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
        bucket = (j - i).clamp(-self.max_distance, self.max_distance) + self.max_distance
        return self.rel_bias(bucket).permute(2, 0, 1)
