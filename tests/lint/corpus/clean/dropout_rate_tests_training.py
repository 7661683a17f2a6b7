"""Attention whose functional dropout picks its rate in the call itself: ``p if self.training else 0.0`` is off in
eval mode, as ``training=self.training`` would be."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dropout_p: float = 0.1):
        super().__init__()
        self.dropout_p = dropout_p

    def forward(self, qkv: torch.Tensor) -> torch.Tensor:
        q, k, v = qkv.unbind(dim=2)
        scores = torch.einsum("bthd,bshd->bhts", q, k / math.sqrt(q.shape[-1]))
        attention = torch.softmax(scores, dim=-1)
        attention = F.dropout(attention, self.dropout_p if self.training else 0.0)
        return torch.einsum("bhts,bshd->bthd", attention, v)
