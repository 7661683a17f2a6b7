"""A decoder stack whose blocks all add to the stream, and one whose modulation (a FiLM layer, a class no other
block shares) rescales the stream by design."""

from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, context_dim=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, kdim=context_dim, vdim=context_dim, batch_first=True)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return self.attn(x, context, context, key_padding_mask=mask, need_weights=False)[0]


class FiLM(nn.Module):
    def __init__(self, dim, cond_dim):
        super().__init__()
        self.to_gamma_beta = nn.Linear(cond_dim, 2 * dim)

    def forward(self, x, cond):
        gamma, beta = self.to_gamma_beta(cond).unsqueeze(1).chunk(2, dim=-1)
        return x * (gamma + 1) + beta


class Decoder(nn.Module):
    def __init__(self, dim, depth, context_dim, cond_dim):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            film = FiLM(dim, cond_dim)
            self.layers.append(nn.ModuleList([film, Attention(dim), Attention(dim, context_dim=context_dim)]))

    def forward(self, x, context, cond, context_mask=None):
        for film, attn, cross_attn in self.layers:
            x = film(x, cond)
            x = attn(x) + x
            x = cross_attn(x, context=context, mask=context_mask) + x
        return x
