"""A correct sequence-first module (seq, batch, d_model) with no batch_first attribute: fed batch-first it mixes items."""
from _base import Base


class Attention(Base):
    def forward(self, query, key=None, value=None, key_padding_mask=None, causal=False, need_weights=False):
        key = query if key is None else key
        value = key if value is None else value
        out = super().forward(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), key_padding_mask, causal, need_weights)
        if need_weights:
            return out[0].transpose(0, 1), out[1]
        return out.transpose(0, 1)  # (seq_q, batch, d_model)
