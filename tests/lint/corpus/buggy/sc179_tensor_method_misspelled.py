"""Methods a tensor does not have, one letter or two from one it has: each call raises AttributeError, but only on
the path that reaches it (a mask given, a chunked prefill), so a test without that path passes."""

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        energy = torch.einsum("bhqd,bhkd->bhqk", q, k) / (d // self.heads) ** 0.5
        if mask is not None:
            energy = energy.mask_fill(~mask, torch.finfo(energy.dtype).min)  # expect: SC179
        return (energy.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, d)


def prefill_mask(query_lens, seq_lens, value=-10000.0):
    mask = torch.zeros(sum(query_lens), max(seq_lens))
    row = 0
    for q_len, seq_len in zip(query_lens, seq_lens):
        start = seq_len - q_len
        mask[row:row + q_len, start:] = value
        block = mask[row:row + q_len, start:seq_len]
        block.mask_fill_(block.tril() == value, 0.0)  # expect: SC179
        row += q_len
    return mask
