"""key_padding_mask read as True = keep, the opposite of its convention."""
from _base import Base


class Attention(Base):
    def padding_keep(self, key_padding_mask):
        return key_padding_mask[:, None, None, :]  # BUG: missing ~
