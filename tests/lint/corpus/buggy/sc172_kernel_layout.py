"""Queries laid out for the other family of fused kernels, known by where their axes come from: (batch, seq,
heads, d_head) given to SDPA, and (batch, heads, seq, d_head) given to flash-attn. The second case reaches the
kernel through a function bound in __init__ (in the style of a model that picks its attention function once)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn import flash_attn_func


def sdpa_attention(queries, keys, values, is_causal):
    return F.scaled_dot_product_attention(queries, keys, values, is_causal=is_causal)  # expect: SC172


def flash_attention(queries, keys, values, is_causal):
    return flash_attn_func(queries, keys, values, causal=is_causal)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, fused=False, rotary=None):
        super().__init__()
        self.pos_embed = rotary or (lambda q, k, v: (q, k, v))
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.in_proj = nn.Linear(dim, 3 * dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)
        self.attn_fn = flash_attention if fused else sdpa_attention

    def forward(self, x, is_causal=True):
        batchsize, seqlen, _ = x.shape
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q = q.view(batchsize, seqlen, self.n_heads, self.head_dim)
        k = k.view(batchsize, seqlen, self.n_heads, self.head_dim)
        v = v.view(batchsize, seqlen, self.n_heads, self.head_dim)
        q, k, v = self.pos_embed(q, k, v)
        out = self.attn_fn(q, k, v, is_causal=is_causal)
        return self.out_proj(out.reshape(batchsize, seqlen, -1))


class HeadsFirst(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        out = flash_attn_func(q, k, v, causal=True)  # expect: SC172
        return out  # (batch, heads, seq, d_head) as the kernel leaves it
