"""Two backends, each given the layout it reads: flash-attn the (batch, seq, heads, d_head) view, SDPA the
(batch, heads, seq, d_head) one."""

import torch.nn as nn
import torch.nn.functional as F

from flash_attn import flash_attn_func


class Attention(nn.Module):
    def attend(self, q, k, v, dropout_p=0.0, is_causal=False):
        # q, k, v: (batch, heads, seq, d_head)
        if self.use_flash:
            out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), dropout_p=dropout_p,
                                  causal=is_causal)
            return out.transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal)


def merge(x, batch, seq):
    x = x.transpose(1, 2).reshape(batch, seq, -1)
    return x
