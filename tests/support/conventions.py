"""Attention modules whose calling convention only the probe finds (no name, attribute or annotation says it).

- ``CausalQKV``: ``forward(query, key, value)`` of causal self-attention; its (seq, seq) triangle refuses keys of
  another length, so building separate query and key lengths (cross-attention) fails.
- ``SeqFirst``: reads ``(seq, batch, d_model)`` and has no ``batch_first`` attribute; ``LyingSeqFirst`` says
  ``batch_first = True`` and is seq-first all the same. ``BatchFirst`` is the same attention batch-first.
- ``NeedsRotary``: ``forward(x, freqs_cis)`` with the rotary table required (Llama style); ``NeedsMask``:
  ``forward(x, mask)`` with a required boolean ``(batch, 1, 1, seq)`` mask, True = may attend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _Heads(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.d_head).transpose(1, 2)  # (batch, heads, seq, d_head)

    def merge(self, x: Tensor) -> Tensor:
        batch, _, seq, _ = x.shape
        return self.out_proj(x.transpose(1, 2).reshape(batch, seq, self.heads * self.d_head))  # (batch, seq, d_model)


class CausalQKV(_Heads):
    def forward(self, query: Tensor, key: Tensor, value: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, heads, seq, seq)
        seq = query.size(1)
        triangle = torch.ones(seq, seq, dtype=torch.bool, device=query.device).tril()  # (seq, seq): keys of this length only
        scores = scores.masked_fill(~triangle, float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class BatchFirst(_Heads):
    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        return self.merge(F.scaled_dot_product_attention(q, k, v))  # (batch, seq, d_model)


class SeqFirst(BatchFirst):
    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.transpose(0, 1)).transpose(0, 1)  # (seq, batch, d_model) in and out


class LyingSeqFirst(SeqFirst):
    batch_first = True  # it is not


class NeedsRotary(_Heads):
    def rotate(self, x: Tensor, freqs_cis: Tensor) -> Tensor:
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # (batch, heads, seq, d_head / 2)
        return torch.view_as_real(pairs * freqs_cis).flatten(-2).type_as(x)

    def forward(self, x: Tensor, freqs_cis: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        q, k = self.rotate(q, freqs_cis), self.rotate(k, freqs_cis)
        return self.merge(F.scaled_dot_product_attention(q, k, v, is_causal=True))


class NeedsMask(_Heads):
    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        return self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask))  # mask: (batch, 1, 1, seq), True = attend


class SharedKV(_Heads):
    """Takes ``kv_heads`` and runs with fewer key/value heads (grouped-query attention)."""

    def __init__(self, d_model: int, heads: int, kv_heads: int) -> None:
        super().__init__(d_model, heads)
        self.kv_heads = kv_heads
        self.k_proj = nn.Linear(d_model, kv_heads * self.d_head)
        self.v_proj = nn.Linear(d_model, kv_heads * self.d_head)

    def kv(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        x = x.view(batch, seq, self.kv_heads, self.d_head).transpose(1, 2)  # (batch, kv_heads, seq, d_head)
        return x.repeat_interleave(self.heads // self.kv_heads, dim=1)  # (batch, heads, seq, d_head)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.split(self.q_proj(x)), self.kv(self.k_proj(x)), self.kv(self.v_proj(x))
        return self.merge(F.scaled_dot_product_attention(q, k, v))


class EqualKV(SharedKV):
    """Takes ``kv_heads`` but its forward splits keys into ``heads`` heads: it runs only with kv_heads == heads."""

    def kv(self, x: Tensor) -> Tensor:
        return self.split(x)  # (batch, heads, seq, d_head): kv_heads < heads cannot be viewed so
