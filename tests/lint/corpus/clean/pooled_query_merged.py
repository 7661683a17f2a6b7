"""Additive attention (in the style of Fastformer's): the heads pool the queries into one global query, and the
transpose that brings the heads next to d_head swaps them with the pooled axis of size 1, so the tensor is still
contiguous and view merges it."""

import torch
import torch.nn as nn


class AdditiveAttention(nn.Module):
    def __init__(self, hidden_size: int, num_attention_heads: int):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.to_q_attn_logits = nn.Linear(hidden_size, num_attention_heads)
        self.softmax = nn.Softmax(dim=-1)

    def transpose_for_scores(self, x: torch.Tensor) -> torch.Tensor:
        x = x.view(*x.size()[:-1], self.num_attention_heads, self.attention_head_size)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, _ = hidden_states.shape
        mixed_query_layer = self.query(hidden_states)
        query_for_score = self.to_q_attn_logits(mixed_query_layer).transpose(1, 2) / self.attention_head_size ** 0.5
        query_weight = self.softmax(query_for_score).unsqueeze(2)
        query_layer = self.transpose_for_scores(mixed_query_layer)
        pooled_query = torch.matmul(query_weight, query_layer).transpose(1, 2).view(
            -1, 1, self.num_attention_heads * self.attention_head_size)
        return self.key(hidden_states) * pooled_query.repeat(1, seq_len, 1)
