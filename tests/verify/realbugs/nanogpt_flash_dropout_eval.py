"""karpathy/nanoGPT #240: the flash path passed dropout_p=self.dropout to SDPA in eval mode too."""
import torch.nn.functional as F

from _styles import Causal


class Fixed(Causal):
    def p(self) -> float:
        return self.dropout if self.training else 0.0

    def attend(self, q, k, v, keep):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=self.p())


class Attention(Fixed):
    def p(self):
        return self.dropout  # BUG: dropout in eval mode
