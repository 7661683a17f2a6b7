"""A diffusers-style attention processor: the module comes in as ``attn``, the input's rank is unknown."""

import torch.nn.functional as F


class AttnProcessor:
    def __call__(self, attn, hidden_states, encoder_hidden_states=None):
        batch_size = hidden_states.shape[0]
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        head_dim = key.shape[-1] // attn.heads
        query = query.view(batch_size, attn.heads, -1, head_dim)  # expect: SC105
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        if attn.norm_q is not None:
            query = attn.norm_q(query)
        hidden_states = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.reshape(batch_size, -1, attn.heads * head_dim)  # expect: SC104
        return attn.to_out(hidden_states)
