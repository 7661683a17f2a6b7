"""ekzhang/jax-js #180: grouped-query attention tiled the kv heads over the query heads instead of repeating each."""
from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def repeat_kv(self, x):
        return x.repeat(1, self.heads // self.kv_heads, 1, 1)  # BUG: tile (h % kv) instead of repeat (h // group)
