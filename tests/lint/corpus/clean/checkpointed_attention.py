"""Attention whose core runs under activation checkpointing: the merge moves the heads next to the head size."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class CheckpointedAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    @staticmethod
    def _attend(q, k, v):
        weights = torch.softmax(q @ k.transpose(-2, -1) * q.size(-1) ** -0.5, dim=-1)
        return weights @ v

    def forward(self, x):
        bsz, seq_len, embed_dim = x.shape
        qkv = self.qkv(x).view(bsz, seq_len, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = checkpoint(self._attend, q, k, v, use_reentrant=False)
        assert attn.shape == (bsz, self.num_heads, seq_len, self.head_dim)
        attn = attn.transpose(1, 2).reshape(bsz, seq_len, embed_dim)
        return self.out_proj(attn)
