"""Memory reading in channels-first layout (video object segmentation): the affinity is the memory keys
transposed against the query keys, ``mkᵀ·qk``, so it is (batch, memory positions, query positions) and the
softmax over dim=1 is over the keys. Either operand of a channels-first product may be the query: only a left
operand named as the query (``qᵀ·k``) puts the keys last."""

import math

import torch
from torch import nn


class MemoryReader(nn.Module):
    def forward(self, mk, qk, mv):
        batch, ck, t, h, w = mk.shape
        mk = mk.flatten(start_dim=2)
        qk = qk.flatten(start_dim=2)
        affinity = mk.transpose(1, 2) @ qk / math.sqrt(ck)  # (batch, THW, HW)
        affinity = torch.softmax(affinity, dim=1)
        return torch.bmm(mv.flatten(start_dim=2), affinity).view(batch, -1, h, w)  # values (batch, C, THW)
