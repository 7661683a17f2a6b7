"""A fill value of -1e-12 leaves masked scores almost unchanged: the mask does nothing."""
from _llama import Llama


class Attention(Llama):
    def fill(self, dtype):
        return -1e-12  # BUG: not a large negative number


Fixed = Llama
