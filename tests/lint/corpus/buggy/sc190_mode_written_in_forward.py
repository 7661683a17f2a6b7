"""A forward that writes the module's mode: every call turns it to eval, so attention dropout never runs in training
(Telechat a7ee9e04, a debugging line left in FlashSelfAttention.forward)."""

import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        self.training = False  # expect: SC190
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        return out.transpose(1, 2).reshape(b, n, -1)
