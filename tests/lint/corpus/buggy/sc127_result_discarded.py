"""Tensor operations whose result is dropped (in the style of a real fix: the queries' transpose and reshape
for a flash kernel computed as a statement), so the tensor stays as it was."""

import math

import torch


def attend(query_layer, key_layer, value_layer, batch, seq, heads):
    query_layer.transpose(0, 1).reshape(batch * seq, heads, -1)  # expect: SC127
    scores = torch.matmul(query_layer, key_layer.transpose(-2, -1)) / math.sqrt(query_layer.size(-1))
    probs = scores.softmax(dim=-1)
    torch.softmax(scores, dim=-1)  # expect: SC127
    return probs @ value_layer
