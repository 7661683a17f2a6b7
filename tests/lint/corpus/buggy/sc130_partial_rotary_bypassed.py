"""A partial rotary (in the style of an early gpt-neox): the rotated slice is stored under the query's name, and on
the partial path the query is rebuilt from the unrotated slice it was computed from, so the rotation is lost where
it matters. On the full path the rotated query is read, so only the overwrite's own inputs tell the bypass."""

import torch


def apply_rotary_pos_emb(q, k, cos, sin):
    rotate = lambda x: torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)  # noqa: E731
    return q * cos + rotate(q) * sin, k * cos + rotate(k) * sin


def rotate_queries_and_keys(query_layer, key_layer, cos, sin, rotary_ndims=None):
    if rotary_ndims is not None:
        query_rot, query_pass = query_layer[..., :rotary_ndims], query_layer[..., rotary_ndims:]
        key_rot, key_pass = key_layer[..., :rotary_ndims], key_layer[..., rotary_ndims:]
    else:
        query_rot, key_rot = query_layer, key_layer
    query_layer, key_layer = apply_rotary_pos_emb(query_rot, key_rot, cos, sin)  # expect: SC130
    if rotary_ndims is not None:
        query_layer = torch.cat((query_rot, query_pass), dim=-1)
        key_layer = torch.cat((key_rot, key_pass), dim=-1)
    return query_layer, key_layer
