"""The twin of sc121: the (batch, seq_k) padding mask is expanded with its key axis last."""

import math

import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)

    def forward(self, x, memory, key_padding_mask):
        B, T, C = x.shape
        S = memory.size(1)
        q = self.q(x).view(B, T, self.heads, self.d_head).transpose(1, 2)
        k, v = self.kv(memory).chunk(2, dim=-1)
        k = k.view(B, S, self.heads, self.d_head).transpose(1, 2)
        v = v.view(B, S, self.heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        pad = key_padding_mask.view(B, S)  # True = padding
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)

    def forward_unsqueezed(self, x, memory, key_padding_mask):
        B, T, C = x.shape
        S = memory.size(1)
        q = self.q(x).view(B, T, self.heads, self.d_head).transpose(1, 2)
        k, v = self.kv(memory).chunk(2, dim=-1)
        k = k.view(B, S, self.heads, self.d_head).transpose(1, 2)
        v = v.view(B, S, self.heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        pad = key_padding_mask.view(B, S)
        scores = scores.masked_fill(pad.unsqueeze(1).unsqueeze(2), float("-inf"))
        attn = scores.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
