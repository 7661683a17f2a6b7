"""The width split by the head count and the scores scaled by the head size in the spellings the buggy twin
uses: 1/sqrt(c // n_head), (d // n_head) ** -0.5, torch.sqrt of the head size."""

import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, width, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.n_head))
        return torch.softmax(att, dim=-1) @ v

    def forward_sqrt(self, x):
        b, t, d = x.size()
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / torch.sqrt(torch.tensor(k.size(-1)))
        return torch.softmax(att, dim=-1) @ v
