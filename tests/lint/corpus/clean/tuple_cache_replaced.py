"""The twin of the tuple cache grown by item: the larger buffers replace the tuple as a whole, and a list kept by
another layer is written into by item, as lists allow."""

import torch
from torch import nn


class CachedAttention(nn.Module):
    def __init__(self, dim, heads, block=4):
        super().__init__()
        self.heads, self.block = heads, block
        self.qkv = nn.Linear(dim, 3 * dim)
        self.kv_cache = None
        self.filled = 0

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if self.kv_cache is None:
            self.kv_cache = (x.new_zeros(b, self.heads, self.block, k.shape[-1]),
                             x.new_zeros(b, self.heads, self.block, k.shape[-1]))
        size = self.kv_cache[0].shape[2]
        if self.filled + n > size:
            grown = (self.filled + n + self.block - 1) // self.block * self.block
            bigger = [x.new_zeros(b, self.heads, grown, k.shape[-1]) for _ in range(2)]
            for i in range(2):
                bigger[i][:, :, :self.filled] = self.kv_cache[i][:, :, :self.filled]
            self.kv_cache = (bigger[0], bigger[1])
        self.kv_cache[0][:, :, self.filled:self.filled + n] = k
        self.kv_cache[1][:, :, self.filled:self.filled + n] = v
        self.filled += n
        keys, values = self.kv_cache[0][:, :, :self.filled], self.kv_cache[1][:, :, :self.filled]
        out = torch.softmax(q @ keys.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ values
        return out.transpose(1, 2).reshape(b, n, d)


class ListCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = [None, None]

    def forward(self, k, v):
        self.slots[0] = k if self.slots[0] is None else torch.cat([self.slots[0], k], dim=2)
        self.slots[1] = v if self.slots[1] is None else torch.cat([self.slots[1], v], dim=2)
        return self.slots[0], self.slots[1]
