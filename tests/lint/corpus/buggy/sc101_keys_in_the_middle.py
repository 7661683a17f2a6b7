"""Graph attention whose scores keep the heads last (einsum "nhm,lhm->nlh"): the keys are dim 1, and a softmax
over dim=-1 normalises over the heads instead (in the style of an ablation of SGFormer's)."""

import torch
import torch.nn as nn


class GATAttention(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, num_heads: int):
        super().__init__()
        self.num_heads, self.dk, self.out_channels = num_heads, in_channels // num_heads, out_channels
        self.wq = nn.Linear(in_channels, in_channels)
        self.wk = nn.Linear(in_channels, in_channels)
        self.wv = nn.Linear(in_channels, num_heads * out_channels)

    def forward(self, qs: torch.Tensor, ks: torch.Tensor, vs: torch.Tensor) -> torch.Tensor:
        qs = self.wq(qs).view(-1, self.num_heads, self.dk)
        ks = self.wk(ks).view(-1, self.num_heads, self.dk)
        vs = self.wv(vs).view(-1, self.num_heads, self.out_channels)
        scores = torch.einsum("nhm,lhm->nlh", qs, ks) / self.dk ** 0.5
        weights = torch.softmax(scores, dim=-1)  # expect: SC101
        return torch.einsum("nlh,lhd->nhd", weights, vs)
