"""A sliding window and a causal mask, both True where masked, joined with '&': only the positions both
mask are masked, so every query sees the future inside its window and the whole past outside it."""

import math

import torch


def local_causal(q, k, v, outside):
    """Causal attention within a window.

    Args:
      outside: (n, n) boolean, True where the key lies outside the window and is masked out.
    """
    n = q.size(-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future & outside, float("-inf"))  # expect: SC125
    return scores.softmax(dim=-1) @ v
