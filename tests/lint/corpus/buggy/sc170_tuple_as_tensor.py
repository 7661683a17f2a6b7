"""Local attention that pads to a multiple of the window: the helper returns (whether it padded, the tensor), the
queries unpack it, and the mask takes the pair whole."""

import math

import torch.nn.functional as F
from einops import rearrange
from torch import nn


def pad_to_multiple(tensor, multiple, dim=-1, value=0):
    length = tensor.shape[dim]
    if length % multiple == 0:
        return False, tensor
    remainder = math.ceil(length / multiple) * multiple - length
    pad_offset = (0,) * (-1 - dim) * 2
    return True, F.pad(tensor, (*pad_offset, 0, remainder), value=value)


class LocalAttention(nn.Module):
    def __init__(self, window_size):
        super().__init__()
        self.window_size = window_size

    def forward(self, q, mask):
        _, q = pad_to_multiple(q, self.window_size, dim=-2)
        mask = pad_to_multiple(mask, self.window_size, dim=-1, value=False)  # expect: SC170
        mask = rearrange(mask, "b (w n) -> b w n", n=self.window_size)
        return q, mask
