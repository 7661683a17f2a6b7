"""The rotary embedding applied twice to the queries (in the shape of real fixes: once before the cache
update, once again in the attention call's helper)."""

import math

import torch


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def attend(q, k, v, cos, sin):
    q = apply_rotary(q, cos, sin)
    k = apply_rotary(k, cos, sin)
    q = apply_rotary(q, cos, sin)  # expect: SC129
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return scores.softmax(dim=-1) @ v
