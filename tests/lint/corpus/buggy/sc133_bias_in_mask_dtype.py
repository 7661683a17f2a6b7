"""A boolean mask turned into an additive bias in its own dtype."""

import torch
import torch.nn.functional as F


def mask_to_bias(mask, dtype):
    mask = mask.to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


def decode(q, k, v, memory, memory_mask):
    # in the style of a real fix: the memory mask's bias took the mask's own (bool) dtype
    memory_mask = mask_to_bias(memory_mask, memory_mask.dtype)  # expect: SC133
    return F.scaled_dot_product_attention(q, k, v, attn_mask=memory_mask)
