"""An optional ``attention_mask`` that holds lengths (int64 counts), a form verify does not build: dropped, not refused."""
from typing import Optional

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
        batch, seq, _ = x.shape
        q, k, v = (p(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        if attention_mask is not None:
            if attention_mask.dtype != torch.long or attention_mask.dim() != 1:
                raise TypeError("attention_mask holds the number of real tokens per item (int64, (batch,))")
            hidden = torch.arange(seq)[None, :] >= attention_mask[:, None]  # (batch, seq)
            scores = scores.masked_fill(hidden[:, None, None, :], torch.finfo(scores.dtype).min)
        return self.o_proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, -1))
