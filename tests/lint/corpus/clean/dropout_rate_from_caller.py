"""A dropout rate taken as a parameter: the caller zeroes it in eval (in the style of OLMo's attention)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, d_model, heads, attention_dropout):
        super().__init__()
        self.heads = heads
        self.attention_dropout = attention_dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def _attend(self, q, k, v, dropout_p=0.0):
        weights = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        weights = F.softmax(weights, dim=-1)
        weights = F.dropout(weights, p=dropout_p)
        return torch.matmul(weights, v)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        out = self._attend(q, k, v, dropout_p=0.0 if not self.training else self.attention_dropout)
        return out.transpose(1, 2).reshape(b, n, -1)
