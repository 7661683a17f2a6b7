"""Window and padding masks (both True = hidden) joined with & instead of |: only keys hidden by both are hidden."""
from _windowed import Windowed


class Attention(Windowed):
    def hidden(self, seq, pad):
        window = self.window_hidden(seq)[None, None]
        return window if pad is None else window & pad[:, None, None, :]  # BUG: the union is hidden, not the intersection


Fixed = Windowed
