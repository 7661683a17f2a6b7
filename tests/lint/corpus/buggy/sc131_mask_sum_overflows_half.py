"""Additive masks that each hold finfo(dtype).min, summed in the activations' dtype with no clamp."""

import torch


def decoder_mask(attention_mask, input_shape, dtype):
    # in the style of a real fix: the causal and the padding masks, each min where masked, added in float16
    batch, length = input_shape
    causal = torch.full((length, length), torch.finfo(dtype).min, dtype=dtype).triu(1)
    causal = causal[None, None].expand(batch, 1, length, length)
    inverted = 1.0 - attention_mask[:, None, None, :].to(dtype)
    padding = inverted.masked_fill(inverted.bool(), torch.finfo(dtype).min)
    combined = padding + causal  # expect: SC131
    return combined


def accumulated(scores, window_mask, keep):
    bias = torch.zeros_like(scores).masked_fill(~keep, torch.finfo(scores.dtype).min)
    bias += window_mask.to(scores.dtype) * torch.finfo(scores.dtype).min  # expect: SC131
    return torch.softmax(scores + bias, dim=-1)
