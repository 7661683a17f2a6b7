"""The dropout rate chosen by a test of ``training`` before the kernel and the functional dropout read it (in the
style of a library's attention backends): in eval the rate is 0."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.functional import dropout


class TorchAttention(nn.Module):
    def __init__(self, dropout_p=0.1):
        super().__init__()
        self.dropout_p = dropout_p

    def forward(self, q, k, v):
        if not self.training:
            dropout_p = 0.0
        else:
            dropout_p = self.dropout_p
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)


class NaiveAttention(nn.Module):
    def __init__(self, dropout_p=0.1):
        super().__init__()
        self.dropout_p = dropout_p

    def forward(self, q, k, v):
        if self.training:
            dropout_p = self.dropout_p
        else:
            dropout_p = 0.0
        weights = torch.softmax(q @ k.transpose(-1, -2) * q.size(-1) ** -0.5, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        return weights @ v
