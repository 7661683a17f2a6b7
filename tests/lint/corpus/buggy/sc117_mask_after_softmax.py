"""fairseq-style attention (time-first) that masks padded keys after the softmax."""

import torch
import torch.nn.functional as F
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, key_padding_mask=None):
        tgt_len, bsz, embed_dim = query.size()
        src_len = key.size(0)
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(key)
        v = self.v_proj(value)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        attn_probs = F.softmax(attn_weights, dim=-1)
        if key_padding_mask is not None:
            attn_probs = attn_probs.view(bsz, self.num_heads, tgt_len, src_len)
            attn_probs = attn_probs.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))  # expect: SC117
            attn_probs = attn_probs.view(bsz * self.num_heads, tgt_len, src_len)
        attn = attn_probs.bmm(v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        return self.out_proj(attn)


def additive_mask_after_softmax(query, key, value, attention_mask):
    """The Hugging Face additive mask (0 or a large negative number per key), added to the probabilities."""
    scores = torch.matmul(query, key.transpose(-1, -2)) / query.size(-1) ** 0.5
    probs = scores.softmax(dim=-1)
    probs = probs + attention_mask  # expect: SC117
    return torch.matmul(probs, value)


def masked_with_the_dtype_minimum(q, k, v, mask, scale):
    """The fill spelled with the dtype's extreme (-torch.finfo(dtype).max), after the softmax."""
    attn = (torch.matmul(q, k.transpose(-1, -2)) * scale).softmax(dim=-1)
    if mask is not None:
        attn = attn.masked_fill(~mask, -torch.finfo(attn.dtype).max)  # expect: SC117
    return torch.matmul(attn, v)
