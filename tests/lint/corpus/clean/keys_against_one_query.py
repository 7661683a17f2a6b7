"""Attention pooling of a point cloud: one pooled query per head, and the product written keys first, so the scores
are [heads, keys, 1] and the keys are axis 1 (a softmax over the last axis, one key, would be 1 everywhere)."""

import math

import torch
from torch import nn


class HeadPooling(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_k = nn.Linear(dim, heads * dim)
        self.to_q = nn.Linear(dim, heads * dim)

    def forward(self, feats, coords):
        d = feats.shape[1]
        query = feats.mean(dim=0, keepdim=True)  # (1, d)
        keys = self.to_k(feats).view(-1, self.heads, d).transpose(0, 1)  # (heads, n, d)
        q = self.to_q(query).view(1, self.heads, d).transpose(0, 1).transpose(1, 2)  # (heads, d, 1)
        weights = torch.softmax(keys @ q / math.sqrt(d), dim=1).view(self.heads, -1)  # over the n keys
        return weights @ coords  # (heads, 3)
