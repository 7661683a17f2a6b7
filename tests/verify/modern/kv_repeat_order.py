"""Keys repeated per group (kv0, kv0, kv1, kv1) but values tiled (kv0, kv1, kv0, kv1): heads pair keys and values of different kv heads."""
from _llama import Llama


class Attention(Llama):
    def attend(self, q, k, v, allowed):
        group = self.n_heads // self.n_kv_heads
        v = v[:, ::group].repeat(1, group, 1, 1)  # BUG: undo the per-group repeat of v and tile it instead
        return super().attend(q, k, v, allowed)


Fixed = Llama
