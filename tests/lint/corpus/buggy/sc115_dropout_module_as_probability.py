"""The attention-dropout module handed to SDPA where it expects a probability."""

import torch.nn.functional as F
from torch import nn


class FusedAttention(nn.Module):
    def __init__(self, dim, heads, attn_drop=0.1):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # (B, heads, N, head_dim) each
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop)  # expect: SC115
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
