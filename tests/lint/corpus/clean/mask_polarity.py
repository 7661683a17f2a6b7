"""Masks used by their polarity: a documented True = masked convention (in the style of Emformer), a mask
name passed another value by the caller (in the style of MPT's key_padding_mask = attention_mask), the
future from triu, the past from tril negated, and two masking masks joined with '|'."""

import math

import torch


def chunk_attention(scores, attention_mask):
    """Mask out the connections a chunk may not see.

    Args:
      attention_mask: (Q, KV) mask where the chunk-wise connections are filled with False,
        and the other, unnecessary connections are filled with True.
    """
    weights = scores.float().masked_fill(attention_mask.unsqueeze(0), float("-inf"))
    return torch.softmax(weights, dim=-1)


def attend(q, k, v, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask[:, None, None, :], torch.finfo(q.dtype).min)
    return scores.softmax(dim=-1) @ v


def block(q, k, v, attention_mask):
    extra = {"key_padding_mask": attention_mask}
    return attend(q, k, v, **extra)


def causal(q, k, v, window):
    n = q.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    past = torch.ones(n, n, dtype=torch.bool).tril()
    scores.masked_fill_(future | torch.ones(n, n, dtype=torch.bool).tril(-window), float("-inf"))
    scores = scores.masked_fill(~past, float("-inf"))
    return scores.softmax(dim=-1) @ v
