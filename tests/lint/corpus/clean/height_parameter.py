"""A helper that merges heads back into a 3-D feature map takes the map's depth, height and width as ``d, h, w``:
``h`` there is a height, and the merge follows the head split's memory order, (dim_head heads)."""

import torch
from torch import nn


class MapAttention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Conv3d(dim, 3 * dim, kernel_size=1, bias=False)
        self.out = nn.Conv3d(dim, dim, kernel_size=1)

    def split(self, x, heads):
        b, l, d, h, w = x.shape
        dim_head = int(l / heads)
        x = x.view(b, dim_head, heads, -1).contiguous()  # (dim_head heads) channels: dim_head outermost
        return x.permute(0, 2, 3, 1).contiguous()  # b heads (d h w) dim_head

    def merge(self, x, d, h, w):
        b, heads, l, dim_head = x.shape
        x = x.permute(0, 3, 1, 2).contiguous()  # b dim_head heads l
        return x.view(b, heads * dim_head, d, h, w).contiguous()

    def forward(self, x):
        B, C, D, H, W = x.shape
        q, k, v = map(lambda t: self.split(t, self.heads), self.qkv(x).chunk(3, dim=1))
        attn = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        out = torch.einsum("bhij,bhjd->bhid", attn.softmax(dim=-1), v)
        return self.out(self.merge(out, d=D, h=H, w=W))
