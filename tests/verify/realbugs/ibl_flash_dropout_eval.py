"""colehurwitz/IBL_MtM_model #13: flash attention kept its dropout in evaluation (validation was not deterministic)."""
import torch.nn.functional as F
from torch import nn

from _styles import Cross


class Fixed(Cross):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__(embed_dim, num_heads, dropout)
        self.attn_dropout = nn.Dropout(dropout)

    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.attn_dropout.p if self.training else 0.0)


class Attention(Fixed):
    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.attn_dropout.p)  # BUG
