"""Correct code in the shapes of three false alarms from the third precision corpus's held-out half: dropout
called inside ``if rate > 0 and self.training``; a fused call on a path ``__init__`` enables only when the rate is
0 (nanoGPT's and bark's ``self.flash``); a 2-D mask made 4-D one ``unsqueeze(0)`` at a time."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class GuardedAttention(nn.Module):
    def __init__(self, d_model, heads, dropout=0.0):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.flash = hasattr(F, "scaled_dot_product_attention") and self.dropout == 0.0

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)  # (batch, heads, seq, d_head)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)
        else:
            attn = (q @ k.transpose(-2, -1) / math.sqrt(self.d_head)).softmax(dim=-1)
            if self.dropout > 0 and self.training:
                attn = F.dropout(attn, p=self.dropout)
            y = attn @ v
        return self.out(y.transpose(1, 2).reshape(b, n, -1))


def attend_one_query_batch(q, k, v, attn_mask):
    """A 2-D (L, S) mask made 4-D one axis at a time for queries of batch 1 (GPT-SoVITS's ONNX attention)."""
    attn_mask = attn_mask.unsqueeze(0)
    q, k, v = (t.unsqueeze(0) for t in (q, k, v))
    attn_mask = attn_mask.unsqueeze(0)
    return F.scaled_dot_product_attention(q, k, v, attn_mask)
