"""Annotated-Transformer-style attention that divides by sqrt(d_k) after the softmax instead of before."""

import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1) / math.sqrt(d_k)  # expect: SC102  # expect: SC116
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn
