"""huggingface/transformers #26792: Mistral's sliding-window mask kept window + 1 keys (triu diagonal -window, not -window + 1)."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    def __init__(self, dim: int, n_heads: int, n_kv_heads=None, window: int = 3) -> None:  # a sliding-window model
        super().__init__(dim, n_heads, n_kv_heads, window)


class Attention(Fixed):
    def allowed(self, seq_q, seq_k):
        if self.window is None:
            return super().allowed(seq_q, seq_k)
        past = seq_k - seq_q
        causal = torch.ones(seq_q, seq_k, dtype=torch.bool).tril(past)
        return causal & torch.ones(seq_q, seq_k, dtype=torch.bool).triu(past - self.window)  # BUG: -window, not -window + 1
