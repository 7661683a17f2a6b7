"""ALiBi made inside forward from a buffer of slopes; scores scaled by the model width instead of the head size."""
from _inside import Alibi


class Attention(Alibi):
    def scale(self):
        return (self.n_heads * self.d_head) ** -0.5  # BUG: d_model, not d_head


Fixed = Alibi
