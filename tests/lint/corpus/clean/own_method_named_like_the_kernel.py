"""A class that writes its own ``scaled_dot_product_attention`` method, as from-scratch tutorials do: ``self.``
calls reach that method, not torch's kernel, and its dropout reads ``self.training``, so handing it the rate in
``forward`` leaves dropout off in eval mode."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout_rate=0.1):
        super().__init__()
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.dropout_rate = dropout_rate
        self.w_qkv = nn.Linear(d_model, 3 * d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def scaled_dot_product_attention(self, q, k, v, mask=None, dropout_p=0.0):
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = F.dropout(torch.softmax(scores, dim=-1), dropout_p, self.training)
        return weights @ v

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.w_qkv(x).view(b, t, 3, self.num_heads, self.d_k).permute(2, 0, 3, 1, 4)
        out = self.scaled_dot_product_attention(q, k, v, mask, self.dropout_rate)
        return self.w_o(out.transpose(1, 2).reshape(b, t, d))
