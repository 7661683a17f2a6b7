"""With a cache, the causal mask is built as if the queries started at position 0."""
import torch
from _llama import Llama


class Attention(Llama):
    def allowed(self, seq_q, seq_k):
        return torch.arange(seq_k)[None, :] <= torch.arange(seq_q)[:, None]  # BUG: queries are the last seq_q positions


Fixed = Llama
