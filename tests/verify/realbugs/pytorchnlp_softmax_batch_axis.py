"""PetrochukM/PyTorch-NLP #2: the attention softmax ran over dim 0 (batch * output length), so every weight was 1."""
from typing import Optional

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    """forward(query (batch, out_len, dims), context (batch, in_len, dims)) -> (output, weights); general attention."""

    def __init__(self, dimensions: int) -> None:
        super().__init__()
        self.linear_in = nn.Linear(dimensions, dimensions, bias=False)
        self.linear_out = nn.Linear(dimensions * 2, dimensions, bias=False)

    def softmax(self, scores: Tensor) -> Tensor:
        return scores.softmax(dim=-1)

    def forward(self, query: Tensor, context: Tensor, mask: Optional[Tensor] = None):
        batch, out_len, dims = query.shape
        scores = self.linear_in(query) @ context.transpose(1, 2)  # (batch, out_len, in_len)
        if mask is not None:
            scores = scores.masked_fill(~mask.bool()[:, None, :], torch.finfo(scores.dtype).min)
        weights = self.softmax(scores.reshape(batch * out_len, -1)).view(batch, out_len, -1)
        mix = weights @ context  # (batch, out_len, dims)
        return torch.tanh(self.linear_out(torch.cat([mix, query], dim=-1))), weights


class Attention(Fixed):
    def softmax(self, scores):
        return scores.softmax(dim=0)  # BUG: over batch * out_len, not over the keys
