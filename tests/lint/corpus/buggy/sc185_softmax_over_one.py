"""Additive (Bahdanau) attention whose energies come out of ``nn.Linear(d, 1)`` as (batch, positions, 1) and are
normalised over that last, size-1 axis: every weight is 1, so the context is the plain sum of the encoder states,
whatever the decoder asks for. The same slip through a view with a literal 1."""

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, enc_dim, dec_dim, hidden):
        super().__init__()
        self.proj = nn.Linear(enc_dim + dec_dim, hidden)
        self.energy = nn.Linear(hidden, 1)
        self.normalise = nn.Softmax(dim=2)

    def forward(self, enc, dec_state):
        batch, length, _ = enc.shape
        dec = dec_state.unsqueeze(1).expand(batch, length, -1)
        e = self.energy(torch.tanh(self.proj(torch.cat([enc, dec], dim=-1))))
        weights = self.normalise(e)  # expect: SC185
        return torch.bmm(weights.view(batch, 1, length), enc).squeeze(1)


class PooledScores(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, dim)

    def forward(self, x):
        batch, length, dim = x.shape
        s = (self.score(x) * x).sum(-1).view(batch, length, 1)
        w = s.softmax(dim=-1)  # expect: SC185
        return (w * x).sum(1)
