"""Positional arguments whose names are the callee's parameters, passed in another order: a fused softmax asks its
kernel-availability helper about (sq, sk, b, np) while the helper reads (b, np, sq, sk), and an attention helper
given the keys where it reads the queries."""

import torch
import torch.nn.functional as F
from torch import nn


class FusedScaleMaskSoftmax(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def is_kernel_available(self, mask, b, np, sq, sk):
        if mask is None or not 16 < sk <= 2048:
            return False
        attn_batches = b * np
        batch_per_block = self.get_batch_per_block(sq, sk, b, np)  # expect: SC150
        return attn_batches % batch_per_block == 0

    def forward(self, scores, mask):
        b, np, sq, sk = scores.size()
        if self.is_kernel_available(mask, b, np, sq, sk):
            return torch.softmax(scores.masked_fill(mask, -10000.0) * self.scale, dim=-1)
        return torch.softmax(scores.masked_fill(mask, -10000.0) * self.scale, dim=-1)

    @staticmethod
    def get_batch_per_block(b, np, sq, sk):
        return max(1, 128 // (b * np)) if sq * sk < 2 ** 16 else 1


def attend(q, k, v, scale):
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)


class CrossAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context):
        b, n, d = x.shape
        q = self.to_q(x).view(b, n, self.heads, d // self.heads).transpose(1, 2)
        k = self.to_k(context).view(b, -1, self.heads, d // self.heads).transpose(1, 2)
        v = self.to_v(context).view(b, -1, self.heads, d // self.heads).transpose(1, 2)
        out = attend(k, q, v, self.scale)  # expect: SC150
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class LlamaStyleAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        bsz, q_len, hidden = hidden_states.size()
        shape = (bsz, q_len, self.num_heads, self.head_dim)
        query_states = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attn_output = F.scaled_dot_product_attention(query_states, value_states, key_states,  # expect: SC150
                                                     is_causal=True)
        return self.o_proj(attn_output.transpose(1, 2).reshape(bsz, q_len, hidden))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.cross_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, query, key, value):
        out, _ = self.cross_attn(key, query, value, need_weights=False)  # expect: SC150
        return self.norm(query + out)
