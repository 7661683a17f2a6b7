"""xformers' and flash-attn's dropout keywords with no training check; the finding points at the argument."""

import torch.nn as nn
import xformers.ops as xops
from flash_attn import flash_attn_func


class XformersAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v):
        return xops.memory_efficient_attention(
            q, k, v,
            p=self.dropout,  # expect: SC114
        )


class FlashAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.attn_dropout = dropout

    def forward(self, q, k, v):
        out = flash_attn_func(
            q,
            k,
            v,
            dropout_p=self.attn_dropout,  # expect: SC114
            causal=True,
        )
        return out
