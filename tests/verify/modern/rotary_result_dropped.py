"""Rotary positions computed and then dropped: the module is order-blind although it takes cos/sin.

A causal decoder ignoring positions passes causality, caching and shift invariance; only giving it
other positions shows that they change nothing.
"""
from _llama import Llama


class Attention(Llama):
    def rotate(self, x, cos, sin):
        rotated = super().rotate(x, cos, sin)  # noqa: F841 - BUG: computed, never used
        return x


Fixed = Llama
