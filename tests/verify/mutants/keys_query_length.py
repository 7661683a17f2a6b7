"""Keys and values reshaped with the query length."""
from _base import Base


class Attention(Base):
    def project(self, query, key, value):
        batch, seq_q, _ = query.shape

        def split(x):
            return x.reshape(batch, seq_q, self.heads, self.d_k).transpose(1, 2)  # BUG: seq_q, not the key length

        return self.split(self.q_proj(query)), split(self.k_proj(key)), split(self.v_proj(value))
