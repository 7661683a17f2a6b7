"""A tensor combined with what a reduction or an index leaves of it, in the shapes that line up: the axis kept
(``[:, -1:]``, ``keepdim=True``, ``keepdims=True``, ``[:, None]``), the first axis taken away (broadcasting lines the
rest up), a vector reduced to a number, the norm's order given first (``x.norm(2)`` is over every element); the buggy
twin loses an axis other than the first."""

import torch


def relative_to_last(position_ids, window=4):
    return (position_ids[:, -1:] - position_ids).clip(max=window)


def stable_softmax(scores):
    shifted = scores - scores.max(dim=2, keepdim=True)[0]
    weights = shifted.exp()
    return weights / weights.sum(dim=2, keepdim=True)


def unit_rows(x):
    return x / x.norm(dim=1)[:, None]


def centred(feats):
    return feats - torch.mean(feats, dim=1, keepdims=True)


def from_the_first(batch):
    return batch - batch.mean(0)


def unit_vector(v):
    return v / v.norm(2)


def scaled(values):
    return values / values.sum(-1)  # rank not known here: a vector's sum is a number
