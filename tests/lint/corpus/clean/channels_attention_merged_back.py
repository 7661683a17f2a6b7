"""Self-attention over a 1-D feature map (batch, channels, length), projected by a 1x1 convolution: the channels
are split as (heads, channels // heads) and moved last for the attention, and both paths move them back in front of
the positions before the view to (batch, channels, length)."""

import torch.nn.functional as F
from torch import nn


class ChannelsSelfAttention(nn.Module):
    def __init__(self, channels, heads=1, fused=True):
        super().__init__()
        self.heads = heads
        self.fused = fused
        self.qkv = nn.Conv1d(channels, 3 * channels, 1)
        self.out = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        n, c, s = x.shape
        qkv = self.qkv(x).view([n, 3 * self.heads, c // self.heads, s]).transpose(2, 3)
        q, k, v = qkv.chunk(3, dim=1)  # (n, heads, s, c // heads)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v).transpose(2, 3).contiguous().view([n, c, s])
        else:
            scale = k.shape[3] ** -0.5
            att = ((q * scale) @ k.transpose(2, 3)).softmax(3)
            y = (att @ v).transpose(2, 3).contiguous().view([n, c, s])
        return x + self.out(y)
