"""Attention that masks the scores before the softmax and zeroes the same entries again after it (rows with every
key masked give NaN otherwise); one that zeroes the probabilities and divides by the new sums; and one that zeroes
whole query rows of padding: each row of real queries still sums to one."""

import math

import torch
import torch.nn as nn


class BaseAttention(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        x = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        if mask is not None:
            x = x.masked_fill(mask, float("-inf"))
        x = self.dropout(x.softmax(-1).nan_to_num(0.0))
        if mask is not None:
            x *= torch.bitwise_not(mask)
        return torch.matmul(x, v)


def renormalised_attention(q, k, v, key_mask):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    weights = weights * key_mask
    weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-9)
    return weights @ v


def padded_queries_zeroed(q, k, v, query_mask):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
    weights = weights * query_mask.unsqueeze(-1)
    return weights @ v


class SimilarityWeightedAttention(nn.Module):
    """A soft weight passed under the name ``mask`` (the nodes' cosine similarity) and multiplied into the
    probabilities by design: nothing says it holds 0 and 1."""

    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        score = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)), dim=-1)
        if mask is not None:
            score = score * mask
        return score @ v
