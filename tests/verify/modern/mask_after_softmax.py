"""The padding mask zeroes probabilities after the softmax: the remaining weights no longer sum to 1."""
from _llama import Llama


class Attention(Llama):
    def forward(self, x, position_embeddings, mask=None, past_key_value=None, use_cache=False):
        self._padding = mask
        return super().forward(x, position_embeddings, None, past_key_value, use_cache)

    def attend(self, q, k, v, allowed):
        scores = (q @ k.transpose(-2, -1) * self.scale()).masked_fill(~allowed, self.fill(q.dtype))
        probs = scores.softmax(dim=-1)
        if self._padding is not None:
            probs = probs.masked_fill(~self._padding[:, None, None, :], 0.0)  # BUG: after the softmax, not renormalised
        return probs @ v


class Fixed(Llama):
    pass
