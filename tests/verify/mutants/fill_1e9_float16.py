"""Masked scores filled with -1e9, which overflows float16."""
from _base import Base


class Attention(Base):
    def fill(self, scores, keep):
        return scores.masked_fill(~keep, -1e9)  # BUG: not representable in float16
