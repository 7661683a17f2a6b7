"""Rotary embedding whose helper returns the (sin, cos) pair: the pair is taken whole and handed to torch where a
sequence fits, concatenated (timm 1.0.29's RotaryEmbedding), stacked, or as a shape and paddings."""

import torch
import torch.nn.functional as F
from torch import nn


def build_rotary_pos_embed(feat_shape, dim, temperature=10000.0):
    bands = 1.0 / temperature ** (torch.arange(0, dim // 2, 2, dtype=torch.float32) / (dim // 2))
    grid = torch.stack(torch.meshgrid([torch.arange(s, dtype=torch.float32) for s in feat_shape], indexing="ij"), -1)
    pos = (grid.unsqueeze(-1) * bands).flatten(0, -3).flatten(1)
    return pos.sin().repeat_interleave(2, -1), pos.cos().repeat_interleave(2, -1)


def window_shape(height, width, window):
    return height // window, width // window


def window_padding(height, width, window):
    return 0, -width % window, 0, -height % window


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, feat_shape, window=7):
        super().__init__()
        self.dim, self.window = dim, window
        self.register_buffer("pos_embed", self._get_pos_embed_values(feat_shape), persistent=False)

    def _get_pos_embed_values(self, feat_shape):
        embeds = build_rotary_pos_embed(feat_shape, self.dim)
        return torch.cat(embeds, -1)

    def get_stacked_embed(self, feat_shape):
        embeds = build_rotary_pos_embed(feat_shape, self.dim)
        return torch.stack(embeds, dim=0)

    def window_counts(self, x):
        height, width = x.shape[-2:]
        padding = window_padding(height, width, self.window)
        x = F.pad(x, padding)
        shape = window_shape(x.shape[-2], x.shape[-1], self.window)
        counts = torch.zeros(shape, device=x.device)
        return x, counts
