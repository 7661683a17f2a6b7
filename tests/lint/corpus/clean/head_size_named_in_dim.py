"""A token-to-token attention whose head size is a constructor argument called ``in_dim``: it stands after the
heads in the split of the projection, so it is one head's size whatever it is called, and the merge after the
transpose takes the heads and the head size side by side. The block below builds it with one head, the only count
for which the merge to ``in_dim`` holds; the heads and the head size are adjacent either way."""

from torch import nn


class TokenAttention(nn.Module):
    def __init__(self, dim, num_heads=1, in_dim=64):
        super().__init__()
        self.num_heads = num_heads
        self.in_dim = in_dim
        self.qkv = nn.Linear(dim, in_dim * 3)
        self.proj = nn.Linear(in_dim, in_dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.in_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.in_dim)
        return self.proj(x)


class TokenBlock(nn.Module):
    def __init__(self, dim, in_dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = TokenAttention(dim, num_heads=1, in_dim=in_dim)

    def forward(self, x):
        return self.attn(self.norm(x))
