"""Key/value caches written by index with keys and values whose dtype nothing matched to the cache's: under
autocast the projections give bfloat16 while the buffers stay float32, and index_copy_/index_put_ refuse it.
SC152 reads the buffers the class allocates; the attention below, given its caches by the caller, is the same
bug (PyTorch raises on it in tests/lint/test_runtime.py) but is not reported: where a cache is allocated is where
its dtype is decided, and that is not in this function."""

import torch
import torch.nn.functional as F
from torch import nn


class KVCache(nn.Module):
    def __init__(self, k_shape, v_shape, device=None, dtype=None):
        super().__init__()
        self.register_buffer("k", torch.zeros(k_shape, device=device, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(v_shape, device=device, dtype=dtype), persistent=False)

    def forward(self, input_pos, k, v):
        k = self.k.index_copy_(2, input_pos, k)  # expect: SC152
        v = self.v.index_copy_(2, input_pos, v)  # expect: SC152
        return k, v


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, input_pos, kv_cache):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        cache_k, cache_v = kv_cache  # keys (B, nh, S, hs); values kept sequence first (S, B, nh, hs)
        k = torch.index_copy(cache_k, 2, input_pos, k)  # a known miss: a cache passed in is the caller's to match
        v_seq = v.permute(2, 0, 1, 3)
        cache_v.index_put_((input_pos,), v_seq)  # (gemma_pytorch passes in caches made in the weights' dtype)
        v = cache_v.permute(1, 2, 0, 3)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)), (k, cache_v)
