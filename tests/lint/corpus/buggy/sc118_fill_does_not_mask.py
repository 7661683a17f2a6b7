"""Masks filled with values that leave the masked keys their weight after the softmax."""

import math

import torch


def tiny_negative_fill(query, key, value, mask):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(mask == 0, -1e-12)  # expect: SC118
    return torch.matmul(scores.softmax(dim=-1), value)


def zero_fill(query, key, value, mask):
    scores = query @ key.transpose(-2, -1) * query.size(-1) ** -0.5
    scores = scores.masked_fill(~mask, 0.0)  # expect: SC118
    return scores.softmax(dim=-1) @ value
