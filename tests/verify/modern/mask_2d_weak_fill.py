"""A wrapper over nn.MultiheadAttention that hands its mask on as attn_mask in torch's 2-D (seq_q, seq_k) shape
(True = not allowed); at two heads every 3-D and 4-D mask is refused. The bug turns the mask into an additive one with a
fill too weak to hide a key (-5 where -inf is needed): masked keys still leak into the output."""

from typing import Optional

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def mask(self, attn_mask: Tensor) -> Tensor:
        return attn_mask

    def forward(self, x: Tensor, attn_mask: Optional[Tensor] = None) -> Tensor:
        return self.attn(x, x, x, attn_mask=None if attn_mask is None else self.mask(attn_mask), need_weights=False)[0]


class Attention(Fixed):
    def mask(self, attn_mask: Tensor) -> Tensor:
        hidden = attn_mask if attn_mask.dtype == torch.bool else attn_mask < 0
        return torch.zeros(attn_mask.shape).masked_fill(hidden, -5.0)  # BUG: -5 does not hide a key; -inf does
