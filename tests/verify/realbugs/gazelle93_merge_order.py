"""gazelle93/Transformer-Various-Positional-Encoding #1: output viewed as (heads, batch, ...) then permuted as (batch, heads, ...)."""
from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def merge(self, x):
        batch, heads, seq, d = x.shape
        flat = x.reshape(batch * heads, seq, d)  # (batch * heads, seq, d)
        wrong = flat.reshape(heads, batch, seq, d)  # BUG: read back as (heads, batch, ...)
        return wrong.permute(1, 2, 0, 3).reshape(batch, seq, heads * d)
