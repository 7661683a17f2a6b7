"""Causal attention that zeroes the masked probabilities after the softmax instead of masking the scores before
it (GPT2 0519d57b: ``x *= torch.bitwise_not(mask)``): the future keys took their share of the softmax, so each row
sums to less than one and the past keys are under-weighted."""

import math

import torch
import torch.nn as nn


class BaseAttention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        x = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        x = self.dropout(x.softmax(-1))
        if mask is not None:
            x *= torch.bitwise_not(mask)  # expect: SC117
        return torch.matmul(x, v)


def zeroed_attention(q, k, v, key_mask):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    weights = weights.masked_fill(~key_mask, 0.0)  # expect: SC117
    return weights @ v
