"""The soft-cap written tanh(scores) · c: the division by c is missing."""
import torch

from _capped import Capped


class Attention(Capped):
    def capped(self, scores):
        return torch.tanh(scores) * self.cap  # BUG: tanh(scores / cap) · cap


Fixed = Capped
