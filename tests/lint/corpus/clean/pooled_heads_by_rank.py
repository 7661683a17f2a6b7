"""Multiscale attention that pools its queries, keys and values through one helper taking either a 4-D
(batch, heads, N, d_head) or a 3-D (batch, N, d) tensor: each branch unpacks the sizes its own rank has, so after the
``if`` the head count and the last size are neither branch's alone (the 3-D unpacking would fail on a 4-D tensor),
and folding the heads into the batch is the pooling layout, not a merge of heads and features."""

import torch
from torch import nn


def pool_tokens(x, pool, hw):
    rank = x.ndim
    if rank == 4:
        B, n_heads, L, C = x.shape
    elif rank == 3:
        n_heads = 1
        B, L, C = x.shape
    else:
        raise ValueError(f"expected a 3-D or 4-D tensor, got {tuple(x.shape)}")
    H, W = hw
    x = x.reshape(B * n_heads, H, W, C).permute(0, 3, 1, 2)  # (B*heads, C, H, W)
    x = pool(x)
    x = x.reshape(B, n_heads, C, -1).transpose(2, 3)  # (B, heads, H'*W', C)
    return x if rank == 4 else x.squeeze(1)


class PooledAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.pool = nn.MaxPool2d(2, 2)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, hw):
        B, N, D = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        q, k, v = pool_tokens(q, self.pool, hw), pool_tokens(k, self.pool, hw), pool_tokens(v, self.pool, hw)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, -1, D)
        return self.proj(out)
