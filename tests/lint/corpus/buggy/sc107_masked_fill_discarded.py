"""The causal mask is computed and dropped: masked_fill is not in place."""

import math

import torch
import torch.nn.functional as F


def causal_attention(q, k, v):
    T = q.size(-2)
    att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
    att.masked_fill(~causal, float("-inf"))  # expect: SC107
    att = F.softmax(att, dim=-1)
    return att @ v
