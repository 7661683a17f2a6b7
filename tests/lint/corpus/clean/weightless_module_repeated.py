"""A feed-forward stack whose dropout and activation objects repeat at every position: they hold no weights, so
nothing is shared (each Linear is built afresh)."""

import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, n_layers, p=0.1):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(dim if i == 0 else hidden, hidden) for i in range(n_layers)])
        dropout = nn.Dropout(p)
        self.dropouts = nn.ModuleList([dropout for _ in range(n_layers)])
        self.act = nn.GELU()
        self.acts = nn.ModuleList([self.act] * n_layers)

    def forward(self, x):
        for linear, act, dropout in zip(self.linears, self.acts, self.dropouts):
            x = dropout(act(linear(x)))
        return x
