"""Generation with a key/value cache through flash-attn: the cached keys are put in front of the new ones and
``causal=True`` is passed, which flash-attn (2.1 and later) aligns bottom-right, so each new query sees every
cached key and the new keys up to its own position."""

import torch
from torch import nn

from flash_attn import flash_attn_func


class FlashCachedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, x, past_key_value=None):
        b, n, d = x.shape
        q = self.q_proj(x).view(b, n, self.heads, -1)  # (batch, seq, heads, d_head): flash-attn's layout
        k = self.k_proj(x).view(b, n, self.heads, -1)
        v = self.v_proj(x).view(b, n, self.heads, -1)
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=1)
            v = torch.cat([past_key_value[1], v], dim=1)
        out = flash_attn_func(q, k, v, 0.0, causal=True)
        return self.o_proj(out.reshape(b, n, d)), (k, v)
