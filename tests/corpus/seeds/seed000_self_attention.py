"""Seed 000 rebuilt: a BERT-style self-attention block with a TF-style layer norm.

Written for this repository to reproduce the structure and the defects of the
source post's module (see README.md): the attention-dropout rate is read from a
module-level name that nothing defines, and the residual add only works when
input_size == hidden_size. Parameter names follow the post so that weights load
into the reference model unchanged.
"""

import math

import torch
from torch import nn


class LayerNorm(nn.Module):
    """Normalises the last axis with epsilon added to the variance, inside the square root."""

    def __init__(self, hidden_size, eps=1e-12):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        variance = centred.pow(2).mean(-1, keepdim=True)
        return self.weight * (centred / torch.sqrt(variance + self.variance_epsilon)) + self.bias


class SelfAttention(nn.Module):
    def __init__(self, num_attention_heads, input_size, hidden_size, hidden_dropout_prob):
        super().__init__()
        if hidden_size % num_attention_heads:
            raise ValueError(f"hidden_size={hidden_size} is not a multiple of num_attention_heads={num_attention_heads}")
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = int(hidden_size / num_attention_heads)
        self.all_head_size = hidden_size
        self.query = nn.Linear(input_size, self.all_head_size)
        self.key = nn.Linear(input_size, self.all_head_size)
        self.value = nn.Linear(input_size, self.all_head_size)
        self.attn_dropout = nn.Dropout(attention_probs_dropout_prob)  # defect: defined nowhere
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.LayerNorm = LayerNorm(hidden_size, eps=1e-12)
        self.out_dropout = nn.Dropout(hidden_dropout_prob)

    def transpose_for_scores(self, x):
        # (batch, seq, all_head_size) -> (batch, heads, seq, head_size)
        split = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(*split).permute(0, 2, 1, 3)

    def forward(self, input_tensor):
        query_layer = self.transpose_for_scores(self.query(input_tensor))
        key_layer = self.transpose_for_scores(self.key(input_tensor))
        value_layer = self.transpose_for_scores(self.value(input_tensor))
        # (batch, heads, seq, seq) scores, scaled by the head size
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = nn.Softmax(dim=-1)(attention_scores)
        attention_probs = self.attn_dropout(attention_probs)
        # (batch, heads, seq, head_size) -> (batch, seq, all_head_size)
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        merged = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*merged)
        hidden_states = self.out_dropout(self.dense(context_layer))
        return self.LayerNorm(hidden_states + input_tensor)  # defect: needs input_size == hidden_size
