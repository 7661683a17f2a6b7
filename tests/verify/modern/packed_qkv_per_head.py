"""GPT-NeoX-style packing: one query_key_value Linear laid out per head [q_h; k_h; v_h], and a dense output.

The reference reads the packing by head counts (stacked or per head); the bug scales by the model width.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, hidden_size: int, num_attention_heads: int) -> None:
        super().__init__()
        self.num_attention_heads, self.head_size = num_attention_heads, hidden_size // num_attention_heads
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
        self.dense = nn.Linear(hidden_size, hidden_size)

    def scale(self) -> float:
        return self.head_size ** -0.5

    def forward(self, hidden_states: Tensor) -> Tensor:
        batch, seq, _ = hidden_states.shape
        qkv = self.query_key_value(hidden_states).view(batch, seq, self.num_attention_heads, 3 * self.head_size)
        q, k, v = qkv.transpose(1, 2).chunk(3, dim=-1)  # (batch, heads, seq, head_size) each
        scores = q @ k.transpose(-2, -1) * self.scale()  # (batch, heads, seq, seq)
        scores = scores.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), torch.finfo(scores.dtype).min)
        return self.dense((scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, -1))


class Attention(Fixed):
    def scale(self) -> float:
        return (self.num_attention_heads * self.head_size) ** -0.5  # BUG: the model width
