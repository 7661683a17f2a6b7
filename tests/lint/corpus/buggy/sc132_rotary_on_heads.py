"""Rotary embeddings given the heads axis as their positions."""

import torch
from einops import rearrange
from torch import nn


def apply_rotary_pos_emb(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, x, seq_len):
        t = torch.arange(seq_len, device=x.device).float()
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.rotary_emb = RotaryEmbedding(config.n_embd // config.n_head)

    def forward(self, x):
        # in the style of a real fix: the length is read after the transpose, where axis 1 holds the heads
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        cos, sin = self.rotary_emb(v, seq_len=q.shape[1])  # expect: SC132
        q, k = apply_rotary_pos_emb(q, cos, sin), apply_rotary_pos_emb(k, cos, sin)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class EinopsAttention(nn.Module):
    def __init__(self, dim, heads, rotary):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.rotary = rotary

    def forward(self, x):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        return self.rotary.rotate_queries_or_keys(q, seq_dim=1)  # expect: SC132
