"""A tiny causal language model written for these tests; ``Model`` builds its padding mask on the query axis.

forward(input_ids, attention_mask=None (1 = real token), position_ids=None) -> (batch, seq, d_model).
"""

from typing import Optional

import torch
from torch import Tensor, nn


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv, self.out = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)

    def forward(self, x: Tensor, keep: Tensor) -> Tensor:
        batch, seq, width = x.shape
        q, k, v = (t.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1) * self.head_dim ** -0.5).masked_fill(~keep, torch.finfo(x.dtype).min)
        return self.out((scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, seq, width))  # (batch, seq, d_model)


class Fixed(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, n_heads: int, n_layers: int, block_size: int = 64) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab_size, d_model), nn.Embedding(block_size, d_model)
        self.layers = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))

    def padding(self, attention_mask: Tensor) -> Tensor:
        return attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq): hide padded keys

    def forward(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None, position_ids: Optional[Tensor] = None) -> Tensor:
        seq = input_ids.size(1)
        positions = torch.arange(seq)[None] if position_ids is None else position_ids
        x = self.tok(input_ids) + self.pos(positions)  # (batch, seq, d_model)
        keep = torch.ones(seq, seq, dtype=torch.bool).tril()[None, None]  # (1, 1, seq, seq)
        if attention_mask is not None:
            keep = keep & self.padding(attention_mask)
        for layer in self.layers:
            x = x + layer(x, keep)
        return x


class Model(Fixed):
    def padding(self, attention_mask: Tensor) -> Tensor:
        return attention_mask.bool()[:, None, :, None]  # BUG: the query axis, so real tokens still see the pads
