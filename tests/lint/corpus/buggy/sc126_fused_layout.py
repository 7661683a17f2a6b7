"""One attention function with two backends given the same tensors (in the style of a real fix): SDPA reads
(batch, heads, seq, d_head), flash-attn reads (batch, seq, heads, d_head)."""

import torch.nn as nn
import torch.nn.functional as F

from flash_attn import flash_attn_func


class Attention(nn.Module):
    def attend(self, q, k, v, dropout_p=0.0, is_causal=False):
        # q, k, v: (batch, heads, seq, d_head)
        if self.use_flash:
            return flash_attn_func(q, k, v, dropout_p=dropout_p, causal=is_causal)  # expect: SC126
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal)
