"""The helper's pair unpacked everywhere; a tuple of paddings handed whole to a layer that takes a tuple."""

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


def same_padding(kernel):
    return kernel // 2, kernel // 2, kernel // 2, kernel // 2


class LocalAttention(nn.Module):
    def __init__(self, window_size, kernel=3):
        super().__init__()
        self.window_size = window_size
        padding = same_padding(kernel)
        self.pad = nn.ZeroPad2d(padding=padding)

    def forward(self, q, mask):
        _, q = pad_to_multiple(q, self.window_size, dim=-2)
        _, mask = pad_to_multiple(mask, self.window_size, dim=-1, value=False)
        mask = rearrange(mask, "b (w n) -> b w n", n=self.window_size)
        return q, mask
