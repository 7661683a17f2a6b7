"""Rotary tables grown on demand, all three taken again; a classifier reset that rebuilds a pool and a head
with a helper of another arity keeps its dropout on purpose."""

import torch
from torch import nn


def rotary_tables(dim, max_len=2048, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    angles = torch.outer(torch.arange(max_len).float(), inv_freq)
    rope = torch.polar(torch.ones_like(angles), angles)
    return rope, angles.cos(), angles.sin()


def classifier(features, classes, with_dropout=True):
    pool, head = nn.AdaptiveAvgPool1d(1), nn.Linear(features, classes)
    return (pool, nn.Dropout(0.1), head) if with_dropout else (pool, head)


class RotaryAttention(nn.Module):
    def __init__(self, dim, heads, classes=10):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.rope, self.cos, self.sin = rotary_tables(self.head_dim)
        self.pool, self.drop, self.head = classifier(dim, classes)

    def reset_classifier(self, classes):
        self.pool, self.head = classifier(self.head.in_features, classes, with_dropout=False)

    def forward(self, x, start_pos=0):
        seq_len = x.size(1)
        if start_pos + seq_len > self.rope.size(0):
            self.rope, self.cos, self.sin = rotary_tables(self.head_dim, max_len=start_pos + seq_len + 2048)
        cos = self.cos[start_pos:start_pos + seq_len]
        sin = self.sin[start_pos:start_pos + seq_len]
        return x, cos, sin
