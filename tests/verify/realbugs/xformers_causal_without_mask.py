"""facebookresearch/xformers #103/#104: a causal attention skipped its causal mask when no other mask was passed."""
from typing import Optional

import torch
from torch import Tensor

from _styles import Cross


class Fixed(Cross):
    def __init__(self, embed_dim: int, num_heads: int, causal: bool = False) -> None:
        super().__init__(embed_dim, num_heads)
        self.causal = causal

    def mask(self, att_mask: Optional[Tensor], seq_q: int, seq_k: int) -> Optional[Tensor]:
        keep = None if att_mask is None else att_mask[:, None, None, :]
        if self.causal:
            tri = torch.ones(seq_q, seq_k, dtype=torch.bool).tril()
            keep = tri if keep is None else keep & tri
        return keep

    def forward(self, query: Tensor, key: Tensor, value: Tensor, att_mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        keep = self.mask(None if att_mask is None else att_mask.bool(), q.size(2), k.size(2))
        return self.out_proj(self.merge(self.attend(q, k, v, keep)))


class Attention(Fixed):
    def mask(self, att_mask, seq_q, seq_k):
        if att_mask is None:
            return None  # BUG: the causal mask is only combined into a mask that was passed
        return super().mask(att_mask, seq_q, seq_k)
