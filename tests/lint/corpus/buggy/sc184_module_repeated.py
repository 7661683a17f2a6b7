"""A stack of attention blocks built by repeating one list entry: ``[block] * n`` (or a comprehension that returns
the same object) holds one module n times, so every layer is the same layer with one set of weights."""

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
    def __init__(self, dim, heads, depth):
        super().__init__()
        block = Block(dim, heads)
        self.layers = nn.ModuleList([block] * depth)  # expect: SC184
        self.refiners = nn.Sequential(*[Block(dim, heads)] * 2)  # expect: SC184
        self.heads = nn.ModuleList([self.refiners for _ in range(depth)])  # expect: SC184

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.refiners(x)
