"""Cross-attention keys and values reshaped with the query length."""
from _llama import CrossAttention


class Attention(CrossAttention):
    def split_keys(self, x, query_len):
        return x.reshape(x.size(0), query_len, self.n_heads, self.head_dim).transpose(1, 2)  # BUG: query_len, not x.size(1)


Fixed = CrossAttention
