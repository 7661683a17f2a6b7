"""huggingface/transformers #39408: flash attention got window_size=(w, w); with causal masking a query saw w + 1 keys."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    def __init__(self, dim: int, n_heads: int, n_kv_heads=None, window: int = 3) -> None:  # a sliding-window model
        super().__init__(dim, n_heads, n_kv_heads, window)


class Attention(Fixed):
    def allowed(self, seq_q, seq_k):
        if self.window is None:
            return super().allowed(seq_q, seq_k)
        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]
        k_pos = torch.arange(seq_k)[None, :]
        return (k_pos <= q_pos) & (q_pos - k_pos <= self.window)  # BUG: [i - w, i] inclusive is w + 1 keys
