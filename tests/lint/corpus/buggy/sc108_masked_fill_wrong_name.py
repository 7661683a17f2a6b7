"""The masked scores go to a new name, and the softmax reads the unmasked ones."""

import math

import torch
import torch.nn.functional as F


def attention(query, key, value, mask):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    masked_scores = scores.masked_fill(mask == 0, -1e9)  # expect: SC108
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value)
