"""A correct batch-first multi-head attention whose steps are methods, so each mutant overrides one.

forward(query, key=None, value=None, key_padding_mask=None (True = pad), causal=False, need_weights=False).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Base(nn.Module):
    def __init__(self, d_model: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads, self.d_k, self.dropout = heads, d_model // heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.d_k).transpose(1, 2)  # (batch, heads, seq, d_k)

    def merge(self, x: Tensor) -> Tensor:
        batch, heads, seq, d_k = x.shape
        return x.transpose(1, 2).reshape(batch, seq, heads * d_k)  # (batch, seq, d_model)

    def project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))

    def scale(self) -> float:
        return math.sqrt(self.d_k)

    def padding_keep(self, key_padding_mask: Tensor) -> Tensor:
        return ~key_padding_mask[:, None, None, :]  # (batch, 1, 1, seq_k), True = may attend

    def causal_keep(self, seq_q: int, seq_k: int) -> Tensor:
        return torch.ones(seq_q, seq_k, dtype=torch.bool).tril()  # (seq_q, seq_k)

    def keep_mask(self, key_padding_mask: Optional[Tensor], causal: bool, seq_q: int, seq_k: int) -> Optional[Tensor]:
        keep = None if key_padding_mask is None else self.padding_keep(key_padding_mask)
        if causal:
            tri = self.causal_keep(seq_q, seq_k)
            keep = tri if keep is None else keep & tri
        return keep

    def fill(self, scores: Tensor, keep: Tensor) -> Tensor:
        return scores.masked_fill(~keep, torch.finfo(scores.dtype).min)

    def normalise(self, scores: Tensor, keep: Optional[Tensor]) -> Tensor:
        probs = scores.softmax(dim=-1)
        return probs if keep is None else probs * keep.any(dim=-1, keepdim=True)  # fully masked rows -> 0

    def drop(self, probs: Tensor) -> Tensor:
        return F.dropout(probs, self.dropout, training=self.training)

    def forward(self, query: Tensor, key: Optional[Tensor] = None, value: Optional[Tensor] = None,
                key_padding_mask: Optional[Tensor] = None, causal: bool = False, need_weights: bool = False):
        key = query if key is None else key
        value = key if value is None else value
        q, k, v = self.project(query, key, value)
        scores = q @ k.transpose(-2, -1) / self.scale()  # (batch, heads, seq_q, seq_k)
        keep = self.keep_mask(key_padding_mask, causal, q.size(2), k.size(2))
        if keep is not None:
            scores = self.fill(scores, keep)
        probs = self.drop(self.normalise(scores, keep))
        out = self.out_proj(self.merge(probs @ v))  # (batch, seq_q, d_model)
        return (out, probs) if need_weights else out
