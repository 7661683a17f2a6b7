"""Softmax over the query axis: columns, not rows, sum to 1."""
from _base import Base


class Attention(Base):
    def normalise(self, scores, keep):
        probs = scores.softmax(dim=-2)  # BUG: dim=-2 is the query axis
        return probs if keep is None else probs * keep.any(dim=-1, keepdim=True)
