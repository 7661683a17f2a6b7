"""Rotary embeddings through complex numbers with the pairs cast to float16: complex32 times the float32 frequencies
is complex64, so the rotated q and k, and the scores, are float32 again, where a -1e10 fill is fine. A cast of some
tensor to float16 says nothing of the scores; a model or a run set to half precision does (``.half()``, autocast)."""

import math

import torch
import torch.nn as nn


def apply_rotary(x, freqs):
    pairs = x.reshape(*x.shape[:-1], -1, 2).to(torch.float16)
    rotated = torch.view_as_real(torch.view_as_complex(pairs) * freqs)
    return rotated.flatten(-2)


class RotarySelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, freqs, causal):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k = apply_rotary(q, freqs), apply_rotary(k, freqs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(causal[:t, :t] == 0, -1e10)
        return (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
