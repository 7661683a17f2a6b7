"""Boolean masks turned into additive biases in the activations' dtype, and a float mask cast to itself."""

import torch
import torch.nn.functional as F


def mask_to_bias(mask, dtype):
    mask = mask.to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


def decode(q, k, v, memory, memory_mask):
    memory_mask = mask_to_bias(memory_mask, memory.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=memory_mask)


def keep_dtype(scores, bias_mask):
    bias = bias_mask.to(bias_mask.dtype)
    return torch.softmax(scores + bias, dim=-1)
