"""Attention without a softmax, written for these tests: forward(x, mask=None (True = attend)) -> (batch, seq, d_model).

``Linear``: linear attention, φ(q)·(Σ φ(k) vᵀ) / φ(q)·Σ φ(k) with φ = elu + 1 (Katharopoulos et al. 2020), masked keys
left out of both sums. ``MaskNumeratorOnly`` leaves them out of the numerator only (the bug: its weights no longer sum
to 1). ``Relu``: relu(q·k / √d) / n over the n visible keys (Wortsman et al. 2023). ``Sigmoid``: sigmoid(q·k / √d − log n)
(Ramapuram et al. 2024). None of them is softmax attention, and all three are correct.
"""

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _Base(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def heads(self, x: Tensor) -> Tensor:
        return x.view(x.size(0), x.size(1), self.n_heads, self.head_dim).transpose(1, 2)  # (batch, heads, seq, head_dim)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, width = x.shape
        q, k, v = self.heads(self.q_proj(x)), self.heads(self.k_proj(x)), self.heads(self.v_proj(x))
        keep = torch.ones(batch, seq, dtype=torch.bool) if mask is None else mask
        out = self.attend(q, k, v, keep[:, None, :, None].to(x.dtype))  # keep: (batch, 1, seq_k, 1)
        return self.out_proj(out.transpose(1, 2).reshape(batch, seq, width))


class Linear(_Base):
    def attend(self, q: Tensor, k: Tensor, v: Tensor, keep: Tensor) -> Tensor:
        fq, fk = F.elu(q) + 1, (F.elu(k) + 1) * keep
        kv = fk.transpose(-2, -1) @ v  # (batch, heads, head_dim, head_dim)
        return (fq @ kv) / (fq @ fk.sum(dim=2, keepdim=True).transpose(-2, -1) + 1e-6)  # eps: φ(q) may underflow to 0


class MaskNumeratorOnly(_Base):
    def attend(self, q: Tensor, k: Tensor, v: Tensor, keep: Tensor) -> Tensor:
        fq, fk = F.elu(q) + 1, F.elu(k) + 1
        kv = (fk * keep).transpose(-2, -1) @ v
        return (fq @ kv) / (fq @ fk.sum(dim=2, keepdim=True).transpose(-2, -1) + 1e-6)  # BUG: masked keys still in the normaliser


class Relu(_Base):
    def attend(self, q: Tensor, k: Tensor, v: Tensor, keep: Tensor) -> Tensor:
        scores = F.relu(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)) * keep.transpose(-2, -1)  # (batch, heads, seq, seq)
        return scores @ v / keep.sum(dim=2, keepdim=True).transpose(-2, -1).clamp(min=1)


class Sigmoid(_Base):
    def attend(self, q: Tensor, k: Tensor, v: Tensor, keep: Tensor) -> Tensor:
        n = keep.sum(dim=2, keepdim=True).transpose(-2, -1).clamp(min=1)  # (batch, 1, 1, 1)
        scores = torch.sigmoid(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) - n.log()) * keep.transpose(-2, -1)
        return scores @ v
