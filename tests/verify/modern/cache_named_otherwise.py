"""A decoder whose cache argument is named ``past_key_value_state`` (no exact vocabulary name): found by role.

The bug ignores the cached keys' offset in the causal mask (built top-left for seq_q x seq_k).
"""
from typing import Optional

import torch
from torch import Tensor

from _llama import Llama


class Fixed(Llama):
    def __init__(self, dim: int, n_heads: int, n_kv_heads: int) -> None:
        super().__init__(dim, n_heads, n_kv_heads)

    def forward(self, x: Tensor, position_embeddings: tuple[Tensor, Tensor], mask: Optional[Tensor] = None,
                past_key_value_state: Optional[tuple[Tensor, Tensor]] = None, use_cache: bool = False):
        return super().forward(x, position_embeddings, mask, past_key_value_state, use_cache)


class Attention(Fixed):
    def allowed(self, seq_q: int, seq_k: int) -> Tensor:
        return torch.ones(seq_q, seq_k, dtype=torch.bool).tril()  # BUG: top-left, ignores the cache offset
