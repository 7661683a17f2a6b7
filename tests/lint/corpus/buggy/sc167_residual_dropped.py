"""A decoder stack of self-attention, cross-attention and feed-forward blocks: the cross-attention block, an
Attention like the self-attention one, replaces the stream instead of adding to it."""

from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, context_dim=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, kdim=context_dim, vdim=context_dim, batch_first=True)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return self.attn(x, context, context, key_padding_mask=mask, need_weights=False)[0]


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return self.net(x)


class Decoder(nn.Module):
    def __init__(self, dim, depth, context_dim):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                Attention(dim),
                Attention(dim, context_dim=context_dim),
                FeedForward(dim),
            ]))

    def forward(self, x, context, context_mask=None):
        for attn, cross_attn, ff in self.layers:
            x = attn(x) + x
            x = cross_attn(x, context=context, mask=context_mask)  # expect: SC167
            x = ff(x) + x
        return x
