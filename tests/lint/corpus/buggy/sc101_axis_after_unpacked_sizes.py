"""Scores of inputs whose rank the function does not show, named by unpacking their size, then normalised over
the queries (dim=2 of [bs, head, seqlen, keys]) instead of the keys."""

import math

import torch
import torch.nn.functional as F


def attention(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))
    bs, head, seqlen, _ = scores.size()
    scores = scores.masked_fill(mask == 0, -1e32)
    weights = F.softmax(scores, dim=2)  # expect: SC101
    return torch.matmul(weights, v), weights.view(bs, head, seqlen, -1)
