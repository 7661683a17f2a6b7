"""Decoding with a key/value cache while the causal mask stays aligned top-left (in the shape of real fixes):
SDPA's is_causal=True, and a causal buffer sliced [:T, :T] with T the query length."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CachedAttention(nn.Module):
    def __init__(self, d_model, heads, block):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x, layer_past=None):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        if layer_past is not None:
            k = torch.cat((layer_past[0], k), dim=-2)
            v = torch.cat((layer_past[1], v), dim=-2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # expect: SC128
        return y.transpose(1, 2).reshape(b, t, c), (k, v)

    def slow(self, x, layer_past=None):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        if layer_past is not None:
            k = torch.cat((layer_past[0], k), dim=-2)
            v = torch.cat((layer_past[1], v), dim=-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))  # expect: SC128
        att = F.softmax(att, dim=-1)
        return (att @ v).transpose(1, 2).reshape(b, t, c), (k, v)
