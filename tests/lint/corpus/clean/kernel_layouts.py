"""Each fused kernel given its own layout: SDPA (batch, heads, seq, d_head) after the transpose, flash-attn
(batch, seq, heads, d_head) as the view leaves it, both through a function picked in __init__, and positional
embeddings that hand back the names they were given (the layout is theirs)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn import flash_attn_func


def sdpa_attention(queries, keys, values, is_causal):
    out = F.scaled_dot_product_attention(queries.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                         is_causal=is_causal)
    return out.transpose(1, 2)


def flash_attention(queries, keys, values, is_causal):
    return flash_attn_func(queries, keys, values, causal=is_causal)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, rotary, fused=False):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.in_proj = nn.Linear(dim, 3 * dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)
        self.pos_embed = rotary
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
