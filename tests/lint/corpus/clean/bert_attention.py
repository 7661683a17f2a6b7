"""BERT self-attention (seed 000 with its dropout rate defined) and the Hugging Face mask conventions."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, num_attention_heads, hidden_size, attention_probs_dropout_prob=0.1):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.attn_dropout = nn.Dropout(attention_probs_dropout_prob)
        self.softmax = nn.Softmax(dim=-1)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            extended = (1.0 - attention_mask[:, None, None, :].to(attention_scores.dtype)) * -10000.0
            attention_scores = attention_scores + extended
        attention_probs = self.softmax(attention_scores)
        attention_probs = self.attn_dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        return context_layer.view(*new_context_layer_shape)


def masked_attention(query, key, value, attention_mask, dropout_p=0.0, training=False):
    """attention_mask: 1 = attend (Hugging Face); filled where it is 0."""
    scores = query @ key.transpose(-1, -2) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, torch.finfo(scores.dtype).min)
    probs = F.dropout(scores.softmax(dim=-1), p=dropout_p, training=training)
    return probs @ value


def padded_attention(query, key, value, key_padding_mask):
    """key_padding_mask: True = padding (nn.MultiheadAttention); filled where it is True."""
    scores = torch.einsum("bhqd,bhkd->bhqk", query, key) * query.size(-1) ** -0.5
    scores.masked_fill_(key_padding_mask[:, None, None, :], float("-inf"))
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), value)
