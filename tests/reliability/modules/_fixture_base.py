"""A small, correct self-attention the misbehaving fixtures build on (each fixture adds one misbehaviour)."""

import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch, seq, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, d_model // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)  # (batch, heads, seq, d_head)
        return self.out(y.transpose(1, 2).reshape(batch, seq, d_model))
