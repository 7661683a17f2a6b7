"""A decoder attention taking an additive padding mask (0 / finfo.min) and adding its own causal mask.

``Attention`` sums the two finfo(dtype).min masks with the scores: in float16 a masked score overflows to -inf, and a
row whose keys are all masked (a left pad) becomes NaN, where float32 gives a finite row. ``Fixed`` clamps the sum at
finfo.min, as transformers did; ``Sdpa`` hands the boolean masks to scaled_dot_product_attention.
"""

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def heads(self, x: Tensor) -> Tensor:
        return x.view(x.size(0), x.size(1), self.n_heads, self.head_dim).transpose(1, 2)  # (batch, heads, seq, head_dim)

    def bias(self, scores: Tensor, attention_mask: Optional[Tensor]) -> Tensor:
        seq = scores.size(-1)
        low = torch.finfo(scores.dtype).min
        causal = torch.full((seq, seq), low, dtype=scores.dtype).triu(1)  # (seq, seq)
        scores = scores + causal
        return scores if attention_mask is None else scores + attention_mask  # BUG: finfo.min twice, or a score below 0, is -inf

    def forward(self, hidden_states: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, width = hidden_states.shape
        q, k, v = (self.heads(t) for t in self.qkv(hidden_states).split(width, dim=-1))
        scores = self.bias(q @ k.transpose(-2, -1) * self.head_dim ** -0.5, attention_mask)  # (batch, heads, seq, seq)
        out = scores.softmax(dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(batch, seq, width))


class Fixed(Attention):
    def bias(self, scores: Tensor, attention_mask: Optional[Tensor]) -> Tensor:
        low = torch.finfo(scores.dtype).min
        seq = scores.size(-1)
        causal = torch.zeros(seq, seq, dtype=scores.dtype).masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), low)
        mask = causal if attention_mask is None else torch.clamp(causal + attention_mask, min=low)  # (batch, 1, seq, seq)
        return scores.masked_fill(mask <= low, low)  # masked scores are finfo.min exactly, never below


class Sdpa(Attention):
    def forward(self, hidden_states: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, width = hidden_states.shape
        q, k, v = (self.heads(t) for t in self.qkv(hidden_states).split(width, dim=-1))
        allowed = torch.ones(seq, seq, dtype=torch.bool).tril()
        if attention_mask is not None:
            allowed = allowed & (attention_mask == 0)  # (batch, 1, seq, seq)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return self.out(out.transpose(1, 2).reshape(batch, seq, width))
