"""NVIDIA/torch-harmonics #221: AttentionS2 passed its drop rate to SDPA whatever the module's mode."""
import torch.nn.functional as F

from _styles import Encoder


class Fixed(Encoder):
    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout if self.training else 0.0)


class Attention(Encoder):
    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout)  # BUG: also in eval
