"""The twin of sc113_input_shape_cross_attention: keys and values take their own input's shape."""

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, key_value_states):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        kv_input_shape = key_value_states.shape[:-1]
        kv_shape = (*kv_input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(key_value_states).view(*kv_input_shape, -1, self.head_dim)
        value_states = self.v_proj(key_value_states).view(kv_shape)
        key_states, value_states = key_states.transpose(1, 2), value_states.transpose(1, 2)
        scores = query_states @ key_states.transpose(-1, -2) * self.head_dim ** -0.5
        attn = torch.softmax(scores, dim=-1)
        return (attn @ value_states).transpose(1, 2).reshape(*input_shape, -1)
