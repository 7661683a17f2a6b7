"""Scores scaled by 1/√heads instead of 1/√head_dim."""
from _llama import Llama


class Attention(Llama):
    def scale(self):
        return self.n_heads ** -0.5  # BUG: heads, not head_dim


Fixed = Llama
