"""Key/value caches written by index after the cache (or the new keys and values) took the other's dtype."""

import torch
import torch.nn.functional as F
from torch import nn


class KVCache(nn.Module):
    def __init__(self, k_shape, v_shape, device=None, dtype=None):
        super().__init__()
        self.register_buffer("k", torch.zeros(k_shape, device=device, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(v_shape, device=device, dtype=dtype), persistent=False)

    def forward(self, input_pos, k, v):
        self.k = self.k.to(k.dtype)  # under autocast the activations decide the dtype
        self.v = self.v.to(v.dtype)
        k = self.k.index_copy_(2, input_pos, k)
        v = self.v.index_copy_(2, input_pos, v)
        return k, v


def index_copy_batched(t, dim, idx, val):
    """A helper that writes what it is given: its callers match the dtypes."""
    return t.index_copy_(dim, idx, val)


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
        k = torch.index_copy(cache_k, 2, input_pos, k.to(cache_k.dtype))
        v_seq = v.permute(2, 0, 1, 3).to(dtype=cache_v.dtype)
        cache_v.index_put_((input_pos,), v_seq)
        v = cache_v.permute(1, 2, 0, 3)
        y = F.scaled_dot_product_attention(q.to(k.dtype), k, v)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C).to(x.dtype)), (k, cache_v)


class LazyStaticCache:
    """Buffers allocated from the first keys they receive: their dtype is the keys' by construction."""

    def __init__(self, max_len):
        self.max_len = max_len
        self.keys = None

    def update(self, key_states, cache_position):
        if self.keys is None:
            b, h, _, d = key_states.shape
            self.keys = key_states.new_zeros(b, h, self.max_len, d)
        self.keys.index_copy_(2, cache_position, key_states)
        return self.keys
