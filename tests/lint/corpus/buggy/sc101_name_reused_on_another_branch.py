"""Attention pooling with two eager paths (in the style of timm's): each branch computes its own scores under the
same name, and one of them normalises over the heads. The other branch's softmax over the keys is of other scores,
so it says nothing of this one."""

import torch
import torch.nn as nn


class AttentionPool(nn.Module):
    def __init__(self, dim: int, num_heads: int = 8, gamma=None):
        super().__init__()
        self.num_heads, self.head_dim, self.gamma = num_heads, dim // num_heads, gamma
        self.scale = self.head_dim ** -0.5
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q = self.q(x.mean(1, keepdim=True)).reshape(b, 1, self.num_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).reshape(b, n, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.gamma is not None:
            shifted = v - v.amin(dim=-2, keepdim=True) + 1e-6
            attn = (q * self.scale) @ k.transpose(-2, -1)
            attn = attn.softmax(dim=1)  # expect: SC101
            out = (attn @ shifted.pow(self.gamma)).pow(1.0 / self.gamma)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            out = attn @ v
        return out.transpose(1, 2).reshape(b, c)
