"""Keys and values cut or zero-padded to the query length before they are reshaped with it (in the style of
FEDformer's auto-correlation), and an attention output broadcast back to the queries (clustered attention):
the query length is right in both reshapes."""

import math

import torch


def auto_correlation(queries, keys, values):
    batch, seq_q, heads, d_head = queries.shape
    _, seq_k, _, _ = values.shape
    if seq_q > seq_k:
        zeros = torch.zeros_like(queries[:, :(seq_q - seq_k), :]).float()
        values = torch.cat([values, zeros], dim=1)
        keys = torch.cat([keys, zeros], dim=1)
    else:
        values = values[:, :seq_q, :, :]
        keys = keys[:, :seq_q, :, :]
    keys = keys.reshape(batch, seq_q, -1)
    return keys, values.reshape(batch, seq_q, -1)


def broadcast_output(queries, keys, values, groups):
    batch, heads, seq_q, d_head = queries.shape
    weights = torch.softmax(queries @ keys.transpose(-2, -1) / math.sqrt(d_head), dim=-1)
    v = weights @ values
    v_broadcast = torch.gather(v, 2, groups)
    return v_broadcast.reshape(-1, d_head).view(batch, heads, seq_q, d_head)
