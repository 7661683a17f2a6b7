"""Rotary tables sliced from position 0 by the new tokens' length where a key/value cache puts the new tokens
further on: during decoding every new token is rotated as if it were the first."""

import torch
import torch.nn.functional as F
from torch import nn


def apply_rotary(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Transformer(nn.Module):
    def __init__(self, layers, dim, vocab_size, max_seq_len, use_kv_cache=True):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.layers = nn.ModuleList(layers)
        self.use_kv_cache = use_kv_cache
        self.register_buffer("freqs_cos", torch.ones(max_seq_len, dim))
        self.register_buffer("freqs_sin", torch.zeros(max_seq_len, dim))

    def forward(self, tokens, start_pos=0):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        if self.use_kv_cache:  # expect: SC138
            freqs_cos = self.freqs_cos[:seqlen]  # expect: SC155
            freqs_sin = self.freqs_sin[:seqlen]  # expect: SC155
        else:
            freqs_cos = self.freqs_cos[:seqlen]
            freqs_sin = self.freqs_sin[:seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cos, freqs_sin, start_pos)
        return h


class CachedSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        hs = n_embd // n_head
        self.register_buffer("cos", torch.ones(block_size, hs))
        self.register_buffer("sin", torch.zeros(block_size, hs))

    def forward(self, x, past_kv=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        cos = self.cos[:T]  # expect: SC155
        sin = self.sin[:T]  # expect: SC155
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if past_kv is not None:
            k = torch.cat([past_kv[0], k], dim=2)
            v = torch.cat([past_kv[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=past_kv is None)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)), (k, v)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, position_ids):
        freqs = position_ids[:, None].float() * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class DecoderModel(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_heads, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.rotary_emb = RotaryEmbedding(hidden_size // num_heads)
        self.layers = nn.ModuleList(layers)

    def forward(self, input_ids, past_key_values=None):
        batch_size, seq_length = input_ids.shape
        hidden_states = self.embed_tokens(input_ids)
        position_ids = torch.arange(seq_length, device=input_ids.device)  # expect: SC155
        cos, sin = self.rotary_emb(position_ids)
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values is not None else None
            hidden_states = layer(hidden_states, cos, sin, past)
        return hidden_states
