"""Heads split inside helpers (a BERT-style method and a module-level function) without a transpose."""

import math

import torch
from torch import nn


def split_heads(x, heads):
    batch, length, width = x.shape
    return x.reshape(batch, heads, length, width // heads)  # expect: SC105


class SelfAttention(nn.Module):
    def __init__(self, num_attention_heads, hidden_size):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)

    def transpose_for_scores(self, x):
        return x.view(x.size(0), self.num_attention_heads, x.size(1), self.attention_head_size)  # expect: SC105

    def forward(self, hidden_states):
        batch_size, seq_length, _ = hidden_states.size()
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = split_heads(self.value(hidden_states), self.num_attention_heads)
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        context = torch.matmul(scores.softmax(dim=-1), value_layer)
        return context.transpose(1, 2).reshape(batch_size, seq_length, self.all_head_size)
