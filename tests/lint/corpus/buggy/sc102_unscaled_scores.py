"""Dot-product attention that forgets the 1/sqrt(d_k) scaling."""

import torch
import torch.nn.functional as F


def attention(query, key, value, mask=None):
    scores = torch.matmul(query, key.transpose(-2, -1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)  # expect: SC102
    return torch.matmul(p_attn, value), p_attn
