"""huggingface/transformers #26792: Mistral's sliding-window mask kept window + 1 keys (triu diagonal -window, not -window + 1)."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def allowed(self, seq_q, seq_k):
        if self.window is None:
            return super().allowed(seq_q, seq_k)
        past = seq_k - seq_q
        causal = torch.ones(seq_q, seq_k, dtype=torch.bool).tril(past)
        return causal & torch.ones(seq_q, seq_k, dtype=torch.bool).triu(past - self.window)  # BUG: -window, not -window + 1
