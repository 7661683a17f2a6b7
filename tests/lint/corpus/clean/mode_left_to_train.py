"""The mode read in forward and written only where torch writes it (``train``, restoring a pickled state)."""

import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(dim, 3 * dim)

    def train(self, mode=True):
        self.training = mode
        return super().train(mode)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.training = state.get("training", False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        return out.transpose(1, 2).reshape(b, n, -1)
