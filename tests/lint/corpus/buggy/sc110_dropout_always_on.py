"""Functional dropout without training=: still dropping at evaluation time."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d_model, heads, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        batch, seq, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, d_model // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_model // self.heads), dim=-1)
        att = F.dropout(att, p=self.dropout)  # expect: SC110
        return (att @ v).transpose(1, 2).reshape(batch, seq, d_model)
