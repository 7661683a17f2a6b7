"""A multi-head attention whose head count is read only in forward, from its config: the class still splits its
width into heads, so a scale of the whole width is SC103's, as in a class that stores the head count."""

import torch
import torch.nn as nn


class ConfigAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_dim = config.hidden_size
        self.qkv = nn.Linear(self.embed_dim, 3 * self.embed_dim)
        self.scale = self.embed_dim ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.config.num_attention_heads
        q, k, v = self.qkv(x).view(b, t, 3, h, c // h).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * self.scale  # expect: SC103
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
