"""facebookresearch/fairseq2 #59: slicing the self-attention mask to a shorter sequence dropped its causal flag."""
from _styles import Causal


class Fixed(Causal):
    pass


class Attention(Causal):
    def causal_keep(self, seq):
        if seq < self.bias.size(0):
            return None  # BUG: the sliced mask lost its causal flag
        return super().causal_keep(seq)
