"""Masks whose polarity comes from their builder or their docstring, filled the wrong way round."""

import math

import torch


def causal_complement(q, k, v):
    # in the style of a real fix: 1 - triu(..., 1) is the past (True = keep), then filled as if it were the future
    query_len, key_len = q.size(-2), k.size(-2)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    bias = torch.zeros(query_len, key_len, dtype=q.dtype, device=q.device)
    keep = 1 - torch.triu(torch.ones(query_len, key_len, dtype=torch.int), diagonal=key_len - query_len + 1)
    bias.masked_fill_(keep.bool(), torch.finfo(q.dtype).min)  # expect: SC109
    scores = scores + bias
    return torch.softmax(scores, dim=-1) @ v


def documented(q, k, v, attention_mask):
    """Attention over a chunk.

    Args:
      attention_mask: (Q, KV) mask where the chunk-wise connections are filled with False,
        and the other, unnecessary connections are filled with True.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(~attention_mask, float("-inf"))  # expect: SC109
    return scores.softmax(dim=-1) @ v
