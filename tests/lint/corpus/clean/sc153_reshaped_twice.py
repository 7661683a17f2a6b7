"""A key padding mask reshaped for broadcasting once, before the attention paths split; a mask of either rank
brought to 4-D under a test of its rank."""

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64, use_flash_attn=True):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.use_flash_attn = use_flash_attn
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x, mask=None):
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
        if mask is not None:
            mask = rearrange(mask, "b j -> b 1 1 j")
        if self.use_flash_attn:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
            if mask is not None:
                dots = dots.masked_fill(~mask, -torch.finfo(dots.dtype).max)
            out = torch.matmul(dots.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, attention_mask=None, use_sdpa=False):
        batch_size, seq_length, hidden_size = hidden_states.size()
        shape = (batch_size, seq_length, self.num_attention_heads, self.attention_head_size)
        query_layer = self.query(hidden_states).view(shape).transpose(1, 2)
        key_layer = self.key(hidden_states).view(shape).transpose(1, 2)
        value_layer = self.value(hidden_states).view(shape).transpose(1, 2)
        if attention_mask is not None:
            attention_mask = attention_mask.bool().unsqueeze(1).unsqueeze(2)
        if use_sdpa:
            context = F.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=attention_mask)
        else:
            scores = query_layer @ key_layer.transpose(-1, -2) / self.attention_head_size ** 0.5
            if attention_mask is not None:
                if attention_mask.dim() == 2:
                    attention_mask = attention_mask.bool().unsqueeze(1).unsqueeze(2)
                scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
            context = scores.softmax(dim=-1) @ value_layer
        return context.transpose(1, 2).reshape(batch_size, seq_length, hidden_size)
