"""Scaling and masking in place (mul_, /=, masked_fill_), as the out-of-place twins would."""

import math

import torch


def attend(q, k, v, mask):
    scores = torch.matmul(q, k.transpose(-2, -1))
    scores.mul_(q.size(-1) ** -0.5)
    scores.masked_fill_(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def attend_augmented(q, k, v, key_padding_mask):
    scores = q @ k.transpose(-2, -1)
    scores /= math.sqrt(k.size(-1))
    scores.masked_fill_(key_padding_mask[:, None, None, :], torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1) @ v
