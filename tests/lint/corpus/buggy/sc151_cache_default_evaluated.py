"""Cross-attention caches whose lookup computes its default first: Python evaluates the default argument of
dict.get, setdefault and getattr before the lookup, so the key/value projections run on every decoding step and
the cache saves nothing."""

import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x, xa=None, kv_cache=None):
        q = self.query(x)
        if kv_cache is None or xa is None:
            k = self.key(x if xa is None else xa)
            v = self.value(x if xa is None else xa)
        else:
            k = kv_cache.get(self.key, self.key(xa))  # expect: SC151
            v = kv_cache.get(self.value, self.value(xa))  # expect: SC151
        b, n, d = q.shape
        q, k, v = (t.view(b, -1, self.n_head, d // self.n_head).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v)
        return self.out(out.transpose(1, 2).reshape(b, n, d))


class DecoderCrossAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.kv_proj = nn.Linear(hidden_size, 2 * hidden_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, encoder_hidden_states, past_key_values):
        bsz, tgt_len, hidden = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_value = past_key_values.setdefault(id(self), self.kv_proj(encoder_hidden_states))  # expect: SC151
        key_states, value_states = key_value.chunk(2, dim=-1)
        shape = (bsz, -1, self.num_heads, hidden // self.num_heads)
        query_states = query_states.view(shape).transpose(1, 2)
        key_states = key_states.reshape(shape).transpose(1, 2)
        value_states = value_states.reshape(shape).transpose(1, 2)
        out = F.scaled_dot_product_attention(query_states, key_states, value_states)
        return self.o_proj(out.transpose(1, 2).reshape(bsz, tgt_len, hidden))
