"""aladdinpersson/Machine-Learning-Collection #159: energy / sqrt(embed_size) where the head dimension is meant.

The tutorial's forward takes (values, keys, query, mask); mask 0 = hidden.
"""
from typing import Optional

from torch import Tensor

from _styles import Cross


class Fixed(Cross):
    def __init__(self, embed_size: int, heads: int) -> None:
        super().__init__(embed_size, heads)
        self.embed_size = embed_size

    def forward(self, values: Tensor, keys: Tensor, query: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(keys)), self.split(self.v_proj(values))
        keep = None if mask is None else mask.bool()[:, None, None, :]
        return self.out_proj(self.merge(self.attend(q, k, v, keep)))


class Attention(Fixed):
    def scale(self):
        return self.embed_size ** -0.5  # BUG: the model width
