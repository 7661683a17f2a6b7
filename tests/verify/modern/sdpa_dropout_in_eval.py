"""SDPA called with dropout_p=self.dropout whatever the mode."""
import torch.nn.functional as F
from _llama import Llama


class Attention(Llama):
    def attend(self, q, k, v, allowed):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=self.dropout)  # BUG: active in eval


class Fixed(Llama):
    def attend(self, q, k, v, allowed):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=self.dropout if self.training else 0.0)
