"""InseeFrLab/torchTextClassifiers #92: LabelAttention inverted its attention mask (1 = real token) before SDPA."""
from typing import Optional

import torch.nn.functional as F
from torch import Tensor

from _styles import Cross


class Fixed(Cross):
    def sdpa_mask(self, attention_mask: Tensor) -> Tensor:
        return attention_mask.bool()[:, None, None, :]  # True = may attend

    def forward(self, query: Tensor, key: Tensor, value: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        mask = None if attention_mask is None else self.sdpa_mask(attention_mask)
        return self.out_proj(self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask)))


class Attention(Fixed):
    def sdpa_mask(self, attention_mask):
        return ~attention_mask.bool()[:, None, None, :]  # BUG: inverted
