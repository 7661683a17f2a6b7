"""NVIDIA/Megatron-LM #411: FlashSelfAttention set dropout_p to 0 in eval and never restored it for training."""
import torch.nn.functional as F

from _styles import Encoder


class Fixed(Encoder):
    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout if self.training else 0.0)


class Attention(Encoder):
    def attend(self, q, k, v, keep):
        if not self.training:
            self.dropout = 0.0  # BUG: training after an evaluation runs without dropout
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.dropout)
