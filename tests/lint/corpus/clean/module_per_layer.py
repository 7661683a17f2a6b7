"""A stack of attention blocks, one module per layer (a comprehension that builds each, or deep copies); sharing one
module is chosen by a flag whose other branch builds them apart; a list of modules indexed by the loop variable. The
buggy twin (buggy/sc184_module_repeated.py) repeats one object."""

import copy

from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        h = self.norm(x)
        return x + self.attn(h, h, h, need_weights=False)[0]


class Encoder(nn.Module):
    def __init__(self, dim, heads, depth, share_refiner=False):
        super().__init__()
        block = Block(dim, heads)
        self.layers = nn.ModuleList([copy.deepcopy(block) for _ in range(depth)])
        if share_refiner:
            refiner = Block(dim, heads)
            self.refiners = nn.ModuleList([refiner] * 2)
        else:
            self.refiners = nn.ModuleList([Block(dim, heads) for _ in range(2)])
        blocks = [Block(dim, heads) for _ in range(depth)]
        self.extra = nn.Sequential(*[blocks[i] for i in range(depth)])

    def forward(self, x):
        for layer in [*self.layers, *self.refiners]:
            x = layer(x)
        return self.extra(x)
