"""Attention written with einops, dim_head and heads as research code often has them."""
import torch
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, dropout=0.0):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner, dim), nn.Dropout(dropout))

    def forward(self, x, mask=None):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in self.to_qkv(x).chunk(3, dim=-1))
        dots = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        if mask is not None:
            dots = dots.masked_fill(~rearrange(mask, "b j -> b 1 1 j"), -torch.finfo(dots.dtype).max)
        out = torch.einsum("b h i j, b h j d -> b h i d", dots.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))
