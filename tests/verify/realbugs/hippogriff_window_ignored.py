"""proger/hippogriff #7: window_size passed to flash attention as (-window, 0), which is global attention."""
import torch

from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def allowed(self, seq_q, seq_k):
        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]
        return torch.arange(seq_k)[None, :] <= q_pos  # BUG: the window never applies
