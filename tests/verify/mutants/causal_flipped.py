"""Causal mask flipped: query i sees keys j >= i."""
from _base import Base
import torch


class Attention(Base):
    def causal_keep(self, seq_q, seq_k):
        return torch.ones(seq_q, seq_k, dtype=torch.bool).triu()  # BUG: triu is the future
