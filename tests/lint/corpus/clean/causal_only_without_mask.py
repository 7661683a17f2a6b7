"""Attention with a key/value cache that asks SDPA for its own causal mask only when the caller passes no mask; once
the cache is in use the caller passes the mask rows of the cached positions, which the other branch hands over."""

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class KVCache(nn.Module):
    def __init__(self, batch, heads, max_len, d_head):
        super().__init__()
        self.register_buffer("k", torch.zeros(batch, heads, max_len, d_head))
        self.register_buffer("v", torch.zeros(batch, heads, max_len, d_head))

    def update(self, input_pos, k, v):
        self.k[:, :, input_pos] = k
        self.v[:, :, input_pos] = v
        return self.k, self.v


class CachedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.wqkv = nn.Linear(dim, 3 * dim)
        self.wo = nn.Linear(dim, dim)
        self.kv_cache: Optional[KVCache] = None

    def forward(self, x, mask: Optional[torch.Tensor] = None, input_pos: Optional[torch.Tensor] = None):
        b, n, d = x.shape
        q, k, v = self.wqkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, n, d))
