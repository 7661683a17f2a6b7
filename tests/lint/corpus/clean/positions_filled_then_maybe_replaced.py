"""A decoder that fills the padded positions with 0 and, only when it decodes step by step, replaces them with its
running position (in the style of meshed-memory-transformer's): on the other path the filled positions are read, so
the fill is not lost."""

import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, vocab: int, d_model: int, max_len: int, padding_idx: int):
        super().__init__()
        self.padding_idx = padding_idx
        self.word_emb = nn.Embedding(vocab, d_model, padding_idx=padding_idx)
        self.pos_emb = nn.Embedding(max_len + 1, d_model, padding_idx=0)
        self.stateful = False
        self.register_buffer("running_seq", torch.zeros((1,), dtype=torch.long))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, n = tokens.shape
        mask_queries = (tokens != self.padding_idx).unsqueeze(-1).float()
        seq = torch.arange(1, n + 1, device=tokens.device).view(1, -1).expand(b, -1)
        seq = seq.masked_fill(mask_queries.squeeze(-1) == 0, 0)
        if self.stateful:
            self.running_seq.add_(1)
            seq = self.running_seq
        return self.word_emb(tokens) + self.pos_emb(seq)
