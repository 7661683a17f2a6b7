"""A correct attention whose constructor names a kv-head count but whose forward only works when it equals the
head count (DeepSeek-style latent attention shapes its keys with the query head count).

Verify draws fewer kv heads for grouped modules; here those shapes are the module's constraint, so the
examples are discarded (a plain call refuses them too) and the properties run on the shapes it takes.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        q = self.wq(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, seq, self.n_heads, -1).transpose(1, 2)  # needs n_kv_heads == n_heads
        v = self.wv(x).view(batch, seq, self.n_heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), torch.finfo(scores.dtype).min)
        return self.wo((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, -1))
