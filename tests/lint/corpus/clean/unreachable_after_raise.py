"""A fused path stubbed out with ``raise NotImplementedError`` and its code kept below for later: no path runs those
lines, so what they would compute (an SDPA call with dropout on in eval, a mask built and left unused) changes no
result. The path that runs is correct."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class PointAttention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1, use_fused=False):
        super().__init__()
        self.heads, self.dropout, self.use_fused = heads, dropout, use_fused
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        keep = mask[:, None, None, :]
        if self.use_fused:
            raise NotImplementedError("the fused kernel is not wired yet")
            square_mask = mask.unsqueeze(-1) & mask.unsqueeze(-2)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep,
                                                 dropout_p=self.dropout if self.training else 0.0)
        return self.out(out.transpose(1, 2).reshape(b, n, d))
