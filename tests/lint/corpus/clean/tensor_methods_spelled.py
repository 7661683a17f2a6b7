"""The buggy twin's attention and prefill mask with the methods spelled right, beside calls on objects that are not
tensors made here: a dict's items, a parameter's own methods, what torch.load returns, a tuple's count."""

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
            energy = energy.masked_fill(~mask, torch.finfo(energy.dtype).min)
        return (energy.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, d)


def prefill_mask(query_lens, seq_lens, value=-10000.0):
    mask = torch.zeros(sum(query_lens), max(seq_lens))
    row = 0
    for q_len, seq_len in zip(query_lens, seq_lens):
        start = seq_len - q_len
        mask[row:row + q_len, start:] = value
        block = mask[row:row + q_len, start:seq_len]
        block.masked_fill_(block.tril() == value, 0.0)
        row += q_len
    return mask


def load_renamed(path, frames, rigid):
    state = torch.load(path)
    renamed = {key.replace("attn.", "attention."): value for key, value in state.items()}
    pieces = torch.split(frames, 2, dim=-1)
    moved = rigid[..., None].apply(frames)
    return renamed, pieces.count(frames), moved
