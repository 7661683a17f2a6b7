"""Scores divided by sqrt(d_model) instead of sqrt(d_k)."""
import math

from _base import Base


class Attention(Base):
    def scale(self):
        return math.sqrt(self.heads * self.d_k)  # BUG: sqrt(d_model)
