"""Heads merged with a view, no transpose: shapes stay right, tokens are scrambled."""
from _base import Base


class Attention(Base):
    def merge(self, x):
        batch, heads, seq, d_k = x.shape
        return x.reshape(batch, seq, heads * d_k)  # BUG: (batch, heads, seq, d_k) memory read as (batch, seq, heads*d_k)
