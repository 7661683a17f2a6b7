"""Given a padding mask, the window is dropped: causal attention over every earlier token that is not padding."""
import torch

from _windowed import Windowed


class Attention(Windowed):
    def hidden(self, seq, pad):
        if pad is None:
            return self.window_hidden(seq)[None, None]
        future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        return future[None, None] | pad[:, None, None, :]  # BUG: the window is lost when padding is given


Fixed = Windowed
