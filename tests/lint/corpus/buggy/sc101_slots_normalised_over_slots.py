"""Multi-head slot attention whose L1 normalisation runs over the slots again (dim=-2) instead of over the inputs:
each slot's weights are never a mean over the inputs, so the softmax over the slots is all there is, across the
queries."""

import torch
import torch.nn as nn


class MultiHeadSlotAttention(nn.Module):
    def __init__(self, num_slots: int, dim: int, heads: int = 4, iters: int = 3, eps: float = 1e-8):
        super().__init__()
        self.num_slots, self.heads, self.iters, self.eps = num_slots, heads, iters, eps
        self.scale = (dim // heads) ** -0.5
        self.slots = nn.Parameter(torch.randn(1, num_slots, dim))
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        b, n, d = inputs.shape
        k = self.to_k(inputs).view(b, n, self.heads, -1).transpose(1, 2)
        v = self.to_v(inputs).view(b, n, self.heads, -1).transpose(1, 2)
        slots = self.slots.expand(b, -1, -1)
        for _ in range(self.iters):
            q = self.to_q(slots).view(b, self.num_slots, self.heads, -1).transpose(1, 2)
            dots = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
            attn = dots.softmax(dim=-2)  # expect: SC101
            attn = nn.functional.normalize(attn + self.eps, p=1, dim=-2)
            updates = torch.einsum("bhjd,bhij->bhid", v, attn).transpose(1, 2).reshape(-1, d)
            slots = self.gru(updates, slots.reshape(-1, d)).reshape(b, -1, d)
        return slots
