"""Seed 001 rebuilt, constructible: seed001_attention.py with ``nn.ModuleList`` spelt right.

The other defect is kept: the masked scores go to a second name that the softmax
reads even when no mask was given (UnboundLocalError), so verify and audit can
show it at run time; lint finds it in both files at the same line, the
one the lint tests name.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    """softmax(Q·Kᵀ / √d_k)·V with an optional mask (0 = hidden)."""

    def forward(self, query, key, value, mask=None, dropout=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        if mask is not None:
            score = scores.masked_fill(mask == 0, -1e9)  # defect: the masked scores get a new name
        p_attn = F.softmax(score, dim=-1)
        if dropout is not None:
            p_attn = dropout(p_attn)
        return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linear_layers = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
        self.output_layer = nn.Linear(d_model, d_model)
        self.attention = Attention()
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        batch_size = query.size(0)
        # each projection: (batch, seq, d_model) -> (batch, h, seq, d_k)
        query, key, value = [
            layer(x).view(batch_size, -1, self.h, self.d_k).transpose(1, 2)
            for layer, x in zip(self.linear_layers, (query, key, value))
        ]
        x, _ = self.attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(batch_size, -1, self.h * self.d_k)
        return self.output_layer(x)


class SublayerConnection(nn.Module):
    """x + dropout(sublayer(norm(x))): the residual around a pre-normalised sublayer."""

    def __init__(self, size, dropout):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class LayerNorm(nn.Module):
    """Normalises by the unbiased standard deviation, epsilon added outside the square root."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.a_2 * centred / (x.std(-1, keepdim=True) + self.eps) + self.b_2


class GELU(nn.Module):
    """The tanh approximation of GELU."""

    def forward(self, x):
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))
        return 0.5 * x * (1 + torch.tanh(inner))


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = GELU()

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))
