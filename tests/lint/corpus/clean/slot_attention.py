"""Slot attention (in the style of Locatello et al.'s): the slots compete for each input, so the softmax runs over
the slots (the queries, dim=1), and each slot's weights are then renormalised over the inputs for a weighted mean."""

import torch
import torch.nn as nn


class SlotAttention(nn.Module):
    def __init__(self, num_slots: int, dim: int, iters: int = 3, eps: float = 1e-8):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim ** -0.5
        self.slots = nn.Parameter(torch.randn(1, num_slots, dim))
        self.to_q, self.to_k, self.to_v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.norm_input, self.norm_slots = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.gru = nn.GRUCell(dim, dim)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        b, n, d = inputs.shape
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        slots = self.slots.expand(b, -1, -1)
        for _ in range(self.iters):
            q = self.to_q(self.norm_slots(slots))
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots.reshape(-1, d)).reshape(b, -1, d)
        return slots


class MultiHeadSlotAttention(nn.Module):
    """The same with heads, the renormalisation over the inputs written as an L1 normalisation."""

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
            attn = dots.softmax(dim=-2)
            attn = nn.functional.normalize(attn + self.eps, p=1, dim=-1)
            updates = torch.einsum("bhjd,bhij->bhid", v, attn).transpose(1, 2).reshape(-1, d)
            slots = self.gru(updates, slots.reshape(-1, d)).reshape(b, -1, d)
        return slots
