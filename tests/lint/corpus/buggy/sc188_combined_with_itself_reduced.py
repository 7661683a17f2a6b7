"""A tensor combined with itself less an axis other than the first: broadcasting lines the shapes up from the right,
so the shorter operand's axes meet the wrong ones. Relative positions from the last position without keeping its
axis (bojone/rerope acfe7884: right for a batch of 1 only), a manual softmax whose row maximum lost its axis, a
normalisation by a norm that lost its axis."""

import torch


def relative_to_last(position_ids, window=4):
    """position_ids: (batch, seq) -> each position's distance to the last one, at most ``window``."""
    return (position_ids[:, -1] - position_ids).clip(max=window)  # expect: SC188


def stable_softmax(scores):
    """scores: (batch, queries, keys)."""
    shifted = scores - scores.max(dim=2)[0]  # expect: SC188
    weights = shifted.exp()
    return weights / weights.sum(dim=2, keepdim=True)


def unit_rows(x):
    """x: (n, d) -> each row at unit length."""
    return x / x.norm(dim=1)  # expect: SC188


def centred(feats):
    return feats - torch.mean(feats, dim=1)  # expect: SC188
