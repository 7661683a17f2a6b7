"""Rotary embedding whose helper returns the (sin, cos) pair: the module reshapes the pair as if it were the one
concatenated table."""

import torch
from torch import nn


def build_rotary_pos_embed(feat_shape, dim, temperature=10000.0):
    bands = 1.0 / temperature ** (torch.arange(0, dim // 2, 2, dtype=torch.float32) / (dim // 2))
    grid = torch.stack(torch.meshgrid([torch.arange(s, dtype=torch.float32) for s in feat_shape], indexing="ij"), -1)
    pos = (grid.unsqueeze(-1) * bands).flatten(0, -3).flatten(1)
    return pos.sin().repeat_interleave(2, -1), pos.cos().repeat_interleave(2, -1)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, feat_shape):
        super().__init__()
        self.dim = dim
        self.register_buffer("pos_embed", self._get_pos_embed_values(feat_shape), persistent=False)

    def _get_pos_embed_values(self, feat_shape):
        embeds = build_rotary_pos_embed(feat_shape, self.dim)  # expect: SC170
        return torch.reshape(embeds, (-1, self.dim * 2))
