"""Mask tiled over heads with repeat where the (batch*heads) order needs repeat_interleave."""
from _base import Base


class Attention(Base):
    def padding_keep(self, key_padding_mask):
        batch, seq_k = key_padding_mask.shape
        tiled = (~key_padding_mask).repeat(self.heads, 1)  # BUG: rows b0, b1, b0, b1, ... not b0, b0, b1, b1
        return tiled.view(batch, self.heads, 1, seq_k)
