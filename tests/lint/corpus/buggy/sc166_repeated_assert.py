"""Cross-attention over packed variable-length sequences: the key side's checks were copied from the query side,
and one copy still names the queries' maximum length, so the keys' is never checked."""

import torch
from torch import nn


class PackedCrossAttention(nn.Module):
    def __init__(self, softmax_scale=None):
        super().__init__()
        self.softmax_scale = softmax_scale

    def forward(self, q, kv, cu_seqlens, max_seqlen, cu_seqlens_k, max_seqlen_k):
        assert cu_seqlens.dtype == torch.int32
        assert isinstance(max_seqlen, int)
        assert cu_seqlens_k.dtype == torch.int32
        assert isinstance(max_seqlen, int)  # expect: SC166
        return q, kv, max_seqlen_k
