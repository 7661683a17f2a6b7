"""espnet/espnet #4584: the masked-fill value was float32's minimum, which overflows bfloat16 (RuntimeError)."""
import torch

from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def fill_value(self, scores):
        return torch.finfo(torch.float32).min  # BUG: not the scores' dtype
