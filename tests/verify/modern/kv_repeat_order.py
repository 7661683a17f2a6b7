"""Key/value heads tiled (kv0, kv1, kv0, kv1) instead of repeated per group (kv0, kv0, kv1, kv1)."""
from _llama import Llama


class Attention(Llama):
    def repeat_kv(self, x):
        return x.repeat(1, self.n_heads // self.n_kv_heads, 1, 1)  # BUG: tile, not repeat_interleave


Fixed = Llama
