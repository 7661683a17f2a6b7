"""A block that calls an attention class of the same file: the attention returns (B, heads, T, d_head) and the
block merges it as if it were (B, T, heads, d_head)."""

import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.d_head = d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_head)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        y = self.attn(self.norm(x))
        return x + self.proj(y.reshape(B, T, C))  # expect: SC104
