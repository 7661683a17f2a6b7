"""Rotary tables computed inside the module: with a cache, the new tokens' positions restart at 0."""
import torch
from _llama import Llama


class Fixed(Llama):
    def __init__(self, dim, n_heads, n_kv_heads, window=None, dropout=0.0):
        super().__init__(dim, n_heads, n_kv_heads, window, dropout)
        half = torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim
        self.register_buffer("rope_inv_freq", 1.0 / 10000.0 ** half, persistent=False)

    def start(self, past):
        return 0 if past is None else past[0].size(2)  # the new tokens follow the cached ones

    def forward(self, x, mask=None, past_key_value=None, use_cache=False):
        positions = torch.arange(x.size(1)) + self.start(past_key_value)
        freqs = positions[:, None].float() * self.rope_inv_freq[None, :]  # (seq, head_dim / 2)
        emb = torch.cat([freqs, freqs], dim=-1)[None].expand(x.size(0), -1, -1)  # (batch, seq, head_dim)
        return super().forward(x, (emb.cos().to(x.dtype), emb.sin().to(x.dtype)), mask, past_key_value, use_cache)


class Attention(Fixed):
    def start(self, past):
        return 0  # BUG: the cache offset is ignored
