"""lucidrains/rotary-embedding-torch #11: rotary frequencies cached by sequence length only, so a call at another offset
reused the first offset's table."""
from _styles import Decoder


class Fixed(Decoder):
    pass


class Attention(Decoder):
    def angles(self, start, seq):
        cache = self.__dict__.setdefault("_freqs", {})
        if seq not in cache:  # BUG: the key should include the offset
            cache[seq] = super().angles(start, seq)
        return cache[seq]
