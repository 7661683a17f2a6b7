"""Causal mask off by one: query i also sees key i + 1."""
from _base import Base
import torch


class Attention(Base):
    def causal_keep(self, seq_q, seq_k):
        return torch.ones(seq_q, seq_k, dtype=torch.bool).tril(diagonal=1)  # BUG: diagonal=1 leaks the next token
