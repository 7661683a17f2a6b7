"""Each query is barred from its own position: the diagonal is masked."""
from _base import Base
import torch


class Attention(Base):
    def keep_mask(self, key_padding_mask, causal, seq_q, seq_k):
        keep = super().keep_mask(key_padding_mask, causal, seq_q, seq_k)
        off_diagonal = ~torch.eye(seq_q, seq_k, dtype=torch.bool)  # BUG: a token cannot attend to itself
        return off_diagonal if keep is None else keep & off_diagonal
