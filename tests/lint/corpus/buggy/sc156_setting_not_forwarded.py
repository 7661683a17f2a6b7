"""Settings a module takes and never uses while it builds a module that takes the same setting without it: the
inner module keeps its default whatever the caller asked for."""

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, use_flash_attn=True):
        super().__init__()
        self.heads = heads
        self.use_flash_attn = use_flash_attn
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        if self.use_flash_attn:
            out = F.scaled_dot_product_attention(q, k, v)
        else:
            out = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class Transformer(nn.Module):
    def __init__(self, dim, depth, heads, use_flash_attn=True):
        super().__init__()
        self.use_flash_attn = use_flash_attn
        self.layers = nn.ModuleList([Attention(dim, heads=heads) for _ in range(depth)])  # expect: SC156

    def forward(self, x):
        for attn in self.layers:
            x = attn(x) + x
        return x


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, causal=False):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.causal = causal

    def forward(self, src):
        n = src.size(1)
        mask = torch.ones(n, n, dtype=torch.bool, device=src.device).triu(1) if self.causal else None
        out, _ = self.attn(src, src, src, attn_mask=mask, need_weights=False)
        return src + out


class Decoder(nn.Module):
    def __init__(self, d_model, n_heads, n_layers, causal=True):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads) for _ in range(n_layers)])  # expect: SC156

    def forward(self, src):
        for layer in self.layers:
            src = layer(src)
        return src
