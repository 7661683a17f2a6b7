"""Heads split with a view straight to (batch, heads, seq, d_k)."""
from _base import Base


class Attention(Base):
    def split(self, x):
        batch, seq, _ = x.shape
        return x.view(batch, self.heads, seq, self.d_k)  # BUG: no transpose
