"""proger/hippogriff #7: window_size passed to flash attention as (-window, 0), which is global attention."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    def __init__(self, dim: int, n_heads: int, n_kv_heads=None, window: int = 3) -> None:  # a sliding-window model
        super().__init__(dim, n_heads, n_kv_heads, window)


class Attention(Fixed):
    def allowed(self, seq_q, seq_k):
        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]
        return torch.arange(seq_k)[None, :] <= q_pos  # BUG: the window never applies
