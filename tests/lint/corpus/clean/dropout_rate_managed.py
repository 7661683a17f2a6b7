"""A fused kernel whose dropout rate the owner manages: a method sets it (``update_dropout``), and whoever loads
the model for inference sets it to 0, so the constructor's rate is not what every call reads."""

import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.dropout_p = dropout
        self.qkv = nn.Linear(dim, 3 * dim)

    def update_dropout(self, dropout):
        self.dropout_p = dropout

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p)
        return out.transpose(1, 2).reshape(b, n, c)
