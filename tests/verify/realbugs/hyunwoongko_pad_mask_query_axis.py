"""hyunwoongko/transformer #40: the padding mask was unsqueezed onto the query axis, (batch, 1, seq, 1)."""
from _styles import Encoder


class Fixed(Encoder):
    pass


class Attention(Encoder):
    def keep(self, mask):
        return mask[:, None, :, None]  # BUG: (batch, 1, seq_q, 1) hides query rows, not keys
