"""Additive masks summed safely: clamped after the sum, built in float32, or combined as booleans first."""

import torch


def decoder_mask(attention_mask, input_shape, dtype):
    batch, length = input_shape
    causal = torch.full((length, length), torch.finfo(dtype).min, dtype=dtype).triu(1)
    causal = causal[None, None].expand(batch, 1, length, length)
    inverted = 1.0 - attention_mask[:, None, None, :].to(dtype)
    padding = inverted.masked_fill(inverted.bool(), torch.finfo(dtype).min)
    combined = padding + causal
    return combined.clamp(min=torch.finfo(dtype).min)


def full_precision(scores, window, keep):
    bias = torch.zeros(scores.shape, dtype=torch.float32, device=scores.device).masked_fill(~keep, torch.finfo(torch.float32).min)
    bias = bias + window.float() * torch.finfo(torch.float32).min
    return torch.softmax(scores.float() + bias, dim=-1)


def booleans_first(scores, causal, keep):
    masked = causal | ~keep
    bias = torch.zeros_like(scores).masked_fill(masked, torch.finfo(scores.dtype).min)
    return torch.softmax(scores + bias, dim=-1)
