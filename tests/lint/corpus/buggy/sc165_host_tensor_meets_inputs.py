"""Masks made in forward on the default device: a causal mask built with torch.ones and a padding filler moved
with a bare .cuda(). Both work on a CPU (or on cuda:0) and fail once the inputs live on another device."""

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))  # expect: SC165
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)


class IncrementalAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, key_padding_mask, src_len):
        batch_size = x.size(0)
        filler = torch.zeros(batch_size, src_len - key_padding_mask.size(1))
        if key_padding_mask.is_cuda:
            filler = filler.cuda()
        key_padding_mask = torch.cat([filler.float(), key_padding_mask.float()], dim=1)  # expect: SC165
        return self.proj(x), key_padding_mask


def default_attention(q, k, v, causal=False):
    # a function of the module that attends (in the style of a ring-attention fallback): the causal mask is made
    # on the CPU while the similarities are where q and k are
    q = q * (q.shape[-1] ** -0.5)
    sim = torch.einsum("b i h d, b j h d -> b h i j", q, k)
    if causal:
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), dtype=torch.bool).triu(j - i + 1)
        sim = torch.where(causal_mask, -torch.finfo(q.dtype).max, sim)  # expect: SC165
    attn = sim.softmax(dim=-1)
    return torch.einsum("b h i j, b j h d -> b i h d", attn, v)
