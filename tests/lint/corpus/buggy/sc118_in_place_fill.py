"""In-place fills are fills: masked_fill_ with 0 on scores that reach a softmax does not mask."""

import math

import torch


def attend(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1))
    scores.div_(math.sqrt(q.size(-1)))
    scores.masked_fill_(mask, 0.0)  # expect: SC118
    return torch.softmax(scores, dim=-1) @ v
