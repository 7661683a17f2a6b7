"""Causal self-attention with a sliding window built into its own mask, Mistral style: query i sees keys
i − w < j ≤ i that are not padding. forward(x, attention_mask=None (1 = token, 0 = padding))."""
from typing import Optional

import torch
from torch import Tensor, nn


class Windowed(nn.Module):
    def __init__(self, d_model: int = 8, n_heads: int = 2, sliding_window: int = 2):
        super().__init__()
        self.n_heads, self.d_head, self.sliding_window = n_heads, d_model // n_heads, sliding_window
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))
        self.o_proj = nn.Linear(d_model, d_model)

    def split(self, x: Tensor) -> Tensor:  # (B, T, C) -> (B, nh, T, hs)
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_head).transpose(1, 2)

    def window_hidden(self, seq: int) -> Tensor:  # (T, T): True = hidden (future, or outside the window)
        i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
        return (j > i) | (j <= i - self.sliding_window)

    def hidden(self, seq: int, pad: Optional[Tensor]) -> Tensor:  # (B or 1, 1, T, T): True = hidden
        window = self.window_hidden(seq)[None, None]
        return window if pad is None else window | pad[:, None, None, :]

    def forward(self, x: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        B, T, C = x.shape
        pad = None if attention_mask is None else attention_mask == 0  # (B, T): True = padding
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) * self.d_head ** -0.5  # (B, nh, T, T)
        scores = scores.masked_fill(self.hidden(T, pad), torch.finfo(scores.dtype).min)
        y = scores.softmax(dim=-1) @ v  # (B, nh, T, hs)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
