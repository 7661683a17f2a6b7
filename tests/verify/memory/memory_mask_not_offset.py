"""The causal mask is built as if the queries started at key 0: each query sees only part of the memory."""
import torch

from _xl import XL


class Attention(XL):
    def hidden(self, q_pos, k_pos):
        n = q_pos.numel()
        return torch.ones(n, k_pos.numel(), dtype=torch.bool).triu(1)  # BUG: triu(1 + m), the memory's length


Fixed = XL
