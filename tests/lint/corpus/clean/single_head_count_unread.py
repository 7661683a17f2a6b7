"""Single-head attention over the whole width in a class that takes a head count and only stores it: nothing reads
``self.num_heads``, the scores are (N, N) over d_model features, and 1/√d_model is their head size. A class that
reads the count (buggy/sc103_width_scaled_scores.py) is multi-head, and there √d_model is the width."""

import torch
import torch.nn.functional as F
from torch import nn


class GraphAttention(nn.Module):
    def __init__(self, input_dim, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.d_model = d_model
        self.input_linear = nn.Linear(input_dim, d_model)
        self.query_linear = nn.Linear(d_model, d_model)
        self.key_linear = nn.Linear(d_model, d_model)
        self.value_linear = nn.Linear(d_model, d_model)

    def forward(self, x, structure_scores):
        x = self.input_linear(x)
        q, k, v = self.query_linear(x), self.key_linear(x), self.value_linear(x)
        scores = torch.matmul(q, k.transpose(-2, -1)) / (self.d_model ** 0.5)
        scores = scores + structure_scores
        return torch.matmul(F.softmax(scores, dim=-1), v)
