"""A BERT-style attention whose dropout rate is never defined (seed 000)."""

from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, num_attention_heads, hidden_size):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.attn_dropout = nn.Dropout(attention_probs_dropout_prob)  # expect: SC111
