"""A decoder whose rotary table is sliced from position 0 when it trains (whole sequences, no cache) and indexed by
the cache positions when it generates: the two branches of one ``if`` tell the cases apart, whatever it tests."""

from typing import Optional

import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, vocab, dim, max_len, blocks):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(blocks)
        half = torch.arange(0, dim, 2).float() / dim
        angles = torch.outer(torch.arange(max_len).float(), 1.0 / 10000 ** half)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles))

    def forward(self, idx: torch.Tensor, input_pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = self.embed(idx)
        if self.training:
            freqs_cis = self.freqs_cis[: idx.shape[1]]
        else:
            freqs_cis = self.freqs_cis[input_pos]
        for block in self.blocks:
            h = block(h, freqs_cis, input_pos)
        return h
