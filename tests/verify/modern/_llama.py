"""A correct Llama-style attention written for these tests; each mutant overrides one step.

forward(x, position_embeddings=(cos, sin), mask=None (True = attend), past_key_value=None, use_cache=False):
rotary positions from the caller (rotate-half layout), n_kv_heads key/value heads shared by groups of
query heads, a (k, v) tuple cache, causal, an optional sliding window, and an optional cross-attention
``memory`` (keys and values from another sequence, no positions, no causality).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Llama(nn.Module):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, window: Optional[int] = None, dropout: float = 0.0) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.window, self.dropout = window, dropout
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def split(self, x: Tensor, heads: int, seq: int) -> Tensor:
        return x.view(x.size(0), seq, heads, self.head_dim).transpose(1, 2)  # (batch, heads, seq, head_dim)

    def rotate(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        half = torch.cat([-x[..., self.head_dim // 2:], x[..., : self.head_dim // 2]], dim=-1)
        return x * cos[:, None] + half * sin[:, None]  # cos, sin: (batch, seq, head_dim)

    def repeat_kv(self, x: Tensor) -> Tensor:
        return x.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)  # (batch, heads, seq_k, head_dim)

    def allowed(self, seq_q: int, seq_k: int) -> Tensor:
        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]  # the queries are the last seq_q positions
        k_pos = torch.arange(seq_k)[None, :]
        keep = k_pos <= q_pos
        if self.window is not None:
            keep = keep & (k_pos > q_pos - self.window)
        return keep  # (seq_q, seq_k)

    def scale(self) -> float:
        return self.head_dim ** -0.5

    def fill(self, dtype: torch.dtype) -> float:
        return torch.finfo(dtype).min

    def attend(self, q: Tensor, k: Tensor, v: Tensor, allowed: Tensor) -> Tensor:
        scores = (q @ k.transpose(-2, -1) * self.scale()).masked_fill(~allowed, self.fill(q.dtype))  # (batch, heads, seq_q, seq_k)
        probs = F.dropout(scores.softmax(dim=-1), self.dropout, training=self.training)
        return probs @ v  # (batch, heads, seq_q, head_dim)

    def keys_values(self, x: Tensor, past: Optional[tuple[Tensor, Tensor]], cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        seq = x.size(1)
        k = self.rotate(self.split(self.wk(x), self.n_kv_heads, seq), cos, sin)
        v = self.split(self.wv(x), self.n_kv_heads, seq)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        return k, v  # (batch, kv_heads, seq_k, head_dim)

    def forward(self, x: Tensor, position_embeddings: tuple[Tensor, Tensor], mask: Optional[Tensor] = None,
                past_key_value: Optional[tuple[Tensor, Tensor]] = None, use_cache: bool = False):
        batch, seq, _ = x.shape
        cos, sin = position_embeddings
        q = self.rotate(self.split(self.wq(x), self.n_heads, seq), cos, sin)  # (batch, heads, seq, head_dim)
        k, v = self.keys_values(x, past_key_value, cos, sin)
        allowed = self.allowed(seq, k.size(2))[None, None]  # (1, 1, seq, seq_k)
        if mask is not None:
            allowed = allowed & mask[:, None, None, :]
        out = self.attend(q, self.repeat_kv(k), self.repeat_kv(v), allowed)
        out = self.wo(out.transpose(1, 2).reshape(batch, seq, -1))  # (batch, seq, dim)
        return (out, (k, v)) if use_cache else out


class CrossAttention(nn.Module):
    """Decoder-to-encoder attention from one memory tensor: forward(x, memory, memory_mask=None (True = attend))."""

    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(dim, dim) for _ in range(4))

    def split_keys(self, x: Tensor, query_len: int) -> Tensor:
        return x.view(x.size(0), x.size(1), self.n_heads, self.head_dim).transpose(1, 2)  # (batch, heads, seq_k, head_dim)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, _ = x.shape
        q = self.to_q(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)  # (batch, heads, seq_q, head_dim)
        k, v = self.split_keys(self.to_k(memory), seq), self.split_keys(self.to_v(memory), seq)
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq_q, seq_k)
        if memory_mask is not None:
            scores = scores.masked_fill(~memory_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        out = scores.softmax(dim=-1) @ v  # (batch, heads, seq_q, head_dim)
        return self.to_out(out.transpose(1, 2).reshape(batch, seq, -1))
