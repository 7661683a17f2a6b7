"""Graylab/DL4Proteins-notebooks #12: self-attention scaled its scores by C**-0.5 (the embedding width), not the head size."""
from _styles import Causal


class Fixed(Causal):
    pass


class Attention(Causal):
    def scale(self):
        return (self.heads * self.d_head) ** -0.5  # BUG: C, the embedding width
