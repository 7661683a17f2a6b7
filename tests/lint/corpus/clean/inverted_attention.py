"""Inverted attention chosen by a flag (in the style of perceiver's): the softmax runs over the queries on
purpose, beside the usual softmax over the keys."""

import torch
import torch.nn as nn
from einops import rearrange


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, heads * dim_head, bias=False)
        self.to_kv = nn.Linear(dim, heads * dim_head * 2, bias=False)

    def forward(self, x, context, inverted_attention=False):
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        if inverted_attention:
            attn = sim.softmax(dim=-2)
            attn = attn / attn.sum(dim=-1, keepdim=True)
        else:
            attn = sim.softmax(dim=-1)
        return torch.einsum("b i j, b j d -> b i d", attn, v)
