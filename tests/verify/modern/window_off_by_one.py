"""A sliding window of w keeps w + 1 keys: j >= i - w instead of j > i - w."""
from _llama import Llama


class Attention(Llama):
    def __init__(self, dim, n_heads, n_kv_heads, window=2, dropout=0.0):
        super().__init__(dim, n_heads, n_kv_heads, window, dropout)

    def allowed(self, seq_q, seq_k):
        import torch

        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]
        k_pos = torch.arange(seq_k)[None, :]
        return (k_pos <= q_pos) & (k_pos >= q_pos - self.window)  # BUG: one key too many


class Fixed(Llama):
    def __init__(self, dim, n_heads, n_kv_heads, window=2, dropout=0.0):
        super().__init__(dim, n_heads, n_kv_heads, window, dropout)
