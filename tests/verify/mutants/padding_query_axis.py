"""The padding mask applied to the query axis."""
from _base import Base


class Attention(Base):
    def padding_keep(self, key_padding_mask):
        return ~key_padding_mask[:, None, :, None]  # BUG: (batch, 1, seq, 1) masks query rows
