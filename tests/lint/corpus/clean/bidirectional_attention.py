"""Bidirectional cross-attention: one similarity between a sequence and its context, normalised over the context
for the sequence (dim=-1) and over the sequence for the context (dim=-2). Both softmaxes are read as methods of the
same scores, so the one over dim=-2 is a choice, not a slip."""

import torch
import torch.nn as nn
from einops import rearrange


class BidirectionalCrossAttention(nn.Module):
    def __init__(self, dim: int, heads: int = 8, dim_head: int = 64):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head ** -0.5
        self.to_qk = nn.Linear(dim, inner, bias=False)
        self.to_v = nn.Linear(dim, inner, bias=False)
        self.context_to_qk = nn.Linear(dim, inner, bias=False)
        self.context_to_v = nn.Linear(dim, inner, bias=False)
        self.to_out = nn.Linear(inner, dim)
        self.context_to_out = nn.Linear(inner, dim)

    def forward(self, x: torch.Tensor, context: torch.Tensor):
        qk, v = self.to_qk(x), self.to_v(x)
        context_qk, context_v = self.context_to_qk(context), self.context_to_v(context)
        qk, v, context_qk, context_v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads)
                                        for t in (qk, v, context_qk, context_v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", qk, context_qk) * self.scale
        attn = sim.softmax(dim=-1)
        context_attn = sim.softmax(dim=-2)
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, context_v)
        context_out = torch.einsum("b h j i, b h j d -> b h i d", context_attn, v)
        out, context_out = (rearrange(t, "b h n d -> b n (h d)") for t in (out, context_out))
        return self.to_out(out), self.context_to_out(context_out)
