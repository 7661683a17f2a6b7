"""flashinfer-ai/flashinfer #348: with fewer queries than keys the causal mask was aligned top-left, not bottom-right."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def allowed(self, seq_q, seq_k):
        return torch.ones(seq_q, seq_k, dtype=torch.bool).tril()  # BUG: kv_idx <= q_idx, ignoring the cached prefix
