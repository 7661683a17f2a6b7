"""The queries' positions start at 0 instead of after the memory: relative distances to the memory are wrong."""
import torch

from _xl import XL


class Attention(XL):
    def query_positions(self, n, m):
        return torch.arange(n)  # BUG: not offset by the memory's length m

    def hidden(self, q_pos, k_pos):
        m = k_pos.numel() - q_pos.numel()
        return k_pos[None, :] > q_pos[:, None] + m  # the mask itself is offset right


Fixed = XL
