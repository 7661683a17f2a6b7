"""The clean twin of sc116 and sc118: Annotated-Transformer-style scaled dot-product attention."""

import math

import torch


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def tiny_negative_fill(query, key, value, mask):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.matmul(scores.softmax(dim=-1), value)


def zero_fill(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) * query.size(-1) ** -0.5
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1) @ value


def masked_with_the_dtype_minimum(q, k, v, mask, scale):
    """The fill spelled with the dtype's extreme, before the softmax."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -torch.finfo(scores.dtype).max)
    return torch.matmul(scores.softmax(dim=-1), v)
