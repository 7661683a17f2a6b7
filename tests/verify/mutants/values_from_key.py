"""Values projected from the key instead of the value."""
from _base import Base


class Attention(Base):
    def project(self, query, key, value):
        return self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(key))  # BUG: key
