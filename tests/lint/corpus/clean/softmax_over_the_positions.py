"""The twin of buggy/sc185_softmax_over_one.py: the (batch, positions, 1) energies normalised over the positions
(dim=1), and a size-1 axis that broadcasting widens before the softmax (``(b, n, 1) + (b, 1, n)`` is (b, n, n))."""

import torch
from torch import nn


class AdditiveAttention(nn.Module):
    def __init__(self, enc_dim, dec_dim, hidden):
        super().__init__()
        self.proj = nn.Linear(enc_dim + dec_dim, hidden)
        self.energy = nn.Linear(hidden, 1)
        self.normalise = nn.Softmax(dim=1)

    def forward(self, enc, dec_state):
        batch, length, _ = enc.shape
        dec = dec_state.unsqueeze(1).expand(batch, length, -1)
        e = self.energy(torch.tanh(self.proj(torch.cat([enc, dec], dim=-1))))
        weights = self.normalise(e)
        return torch.bmm(weights.view(batch, 1, length), enc).squeeze(1)


class PooledScores(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, dim)
        self.keys = nn.Linear(dim, dim)

    def forward(self, x):
        batch, length, dim = x.shape
        s = (self.score(x) * x).sum(-1).view(batch, length, 1)
        w = s.softmax(dim=1)
        bias = s.view(batch, length, 1) + self.keys(x).sum(-1).unsqueeze(1)  # (b, n, 1) + (b, 1, n): (b, n, n)
        return (w * x).sum(1), bias.softmax(dim=-1)
