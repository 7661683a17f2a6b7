"""reczoo/FuxiCTR #30: heads split with query.view(batch * heads, -1, dim) and no transpose."""
from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def split(self, x):
        batch, seq, _ = x.shape
        return x.reshape(batch, self.heads, seq, self.d_head)  # BUG: view without transpose

    def merge(self, x):
        batch, heads, seq, d = x.shape
        return x.reshape(batch, seq, heads * d)
