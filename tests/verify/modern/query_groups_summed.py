"""Query heads averaged within each kv group, then attended once per kv head."""
from _llama import Llama


class Attention(Llama):
    def attend(self, q, k, v, allowed):
        group = self.n_heads // self.n_kv_heads
        batch, _, seq, dim = q.shape
        q = q.view(batch, self.n_kv_heads, group, seq, dim).mean(dim=2)  # BUG: the group's queries averaged
        k, v = k[:, ::group], v[:, ::group]  # (batch, kv_heads, seq_k, head_dim)
        out = super().attend(q, k, v, allowed)  # (batch, kv_heads, seq, head_dim)
        return out.repeat_interleave(group, dim=1)


Fixed = Llama
