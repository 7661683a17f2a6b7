"""pytorch/executorch #2010: with the KV cache the rotary table was not sliced at start_pos:start_pos + seqlen."""
from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def start(self, past):
        return 0  # BUG: new tokens rotated as if at positions 0..seq-1 whatever the cache holds
