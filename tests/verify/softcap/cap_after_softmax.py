"""The soft-cap applied to the probabilities instead of the logits."""
import torch

from _capped import Capped


class Attention(Capped):
    def weights(self, scores):
        return self.capped(scores.softmax(dim=-1))  # BUG: capped after the softmax


Fixed = Capped
