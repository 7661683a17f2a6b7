"""BLOOM-style attention given an ALiBi bias (batch·heads, 1, seq_k) = slope_h · key position, causal.

Added to the scores it is relative under the softmax (a constant per query row moves nothing), so shifting every
position changes nothing. The bug multiplies the scores by it instead: absolute positions leak into the output."""

import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, hidden_size: int, n_head: int) -> None:
        super().__init__()
        self.n_head, self.head_dim = n_head, hidden_size // n_head
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
        self.dense = nn.Linear(hidden_size, hidden_size)

    def biased(self, scores: Tensor, alibi: Tensor) -> Tensor:
        return scores + alibi

    def forward(self, hidden_states: Tensor, alibi: Tensor) -> Tensor:
        batch, seq, width = hidden_states.shape
        q, k, v = (t.view(batch, seq, self.n_head, self.head_dim).transpose(1, 2)
                   for t in self.query_key_value(hidden_states).split(width, dim=-1))  # (batch, heads, seq, head_dim)
        scores = q @ k.transpose(-2, -1) * self.head_dim ** -0.5  # (batch, heads, seq, seq)
        scores = self.biased(scores, alibi.view(batch, self.n_head, 1, seq))
        hidden = ~torch.ones(seq, seq, dtype=torch.bool).tril()
        probs = scores.masked_fill(hidden, torch.finfo(scores.dtype).min).softmax(dim=-1)
        return self.dense((probs @ v).transpose(1, 2).reshape(batch, seq, width))


class Attention(Fixed):
    def biased(self, scores: Tensor, alibi: Tensor) -> Tensor:
        return scores * (1 + alibi)  # BUG: multiplied, not added: no longer relative
