"""mlwithme/TransformerTranslation #6: masked_fill(key_padding_mask...) filled the real tokens; the fill belongs where the mask is 0.

Its key_padding_mask follows the model's own convention: 1 = real token.
"""
from _styles import Cross


class Fixed(Cross):
    def keep(self, key_padding_mask):
        return key_padding_mask[:, None, None, :]  # (batch, 1, 1, seq_k); 1 = real token


class Attention(Cross):
    def keep(self, key_padding_mask):
        return ~key_padding_mask[:, None, None, :]  # BUG: hides the real tokens
