"""The twin of sc120: the fill is the scores' dtype's lowest value, so float16 holds it."""

import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, mask):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.heads, self.d_k).transpose(1, 2)
        k = k.view(B, T, self.heads, self.d_k).transpose(1, 2)
        v = v.view(B, T, self.heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
        out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2).contiguous().view(B, T, C)


def half_model(d_model, heads):
    return Attention(d_model, heads).half()
