"""bentrevett/pytorch-seq2seq #191: energy.masked_fill(mask == 0, -1e10) cannot run in half precision."""
from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def fill_value(self, scores):
        return -1e10  # BUG: overflows float16
