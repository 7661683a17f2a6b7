"""FudanNLP/fastNLP #254: DotAttention's softmax used dim=2, the query axis once inputs are 4-D (batch, heads, q, k)."""
from _styles import Cross


class Fixed(Cross):
    pass


class Attention(Cross):
    def normalise(self, scores):
        return scores.softmax(dim=2)  # BUG: the query axis of (batch, heads, seq_q, seq_k)
