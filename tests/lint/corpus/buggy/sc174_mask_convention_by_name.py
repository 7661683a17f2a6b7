"""Masks used the wrong way round for what their public names say (Hugging Face's attention_mask, torch's
key_padding_mask): SC174, opt-in, as the name alone often holds a prepared mask of the other polarity."""

import math

import torch


def hf_style_attention(query, key, value, attention_mask):
    """attention_mask follows Hugging Face: 1 = attend, 0 = padding."""
    scores = query @ key.transpose(-1, -2) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(attention_mask[:, None, None, :].bool(), float("-inf"))  # expect: SC174
    return torch.softmax(scores, dim=-1) @ value


def torch_style_attention(query, key, value, key_padding_mask):
    """key_padding_mask follows nn.MultiheadAttention: True = padding."""
    scores = query @ key.transpose(-1, -2) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))  # expect: SC174
    return torch.softmax(scores, dim=-1) @ value
