"""A rotary result overwritten before it is read (in the shape of a real partial-rotary fix: the rotated half
is computed, then the unrotated half is concatenated back), and a softmax whose result is replaced unread."""

import math

import torch


def apply_rotary(q, k, cos, sin):
    return q * cos + q.flip(-1) * sin, k * cos + k.flip(-1) * sin


def partial_rotary(query, key, cos, sin, rotary_dims):
    query_rot, query_pass = query[..., :rotary_dims], query[..., rotary_dims:]
    key_rot, key_pass = key[..., :rotary_dims], key[..., rotary_dims:]
    query, key = apply_rotary(query_rot, key_rot, cos, sin)  # expect: SC130
    query = torch.cat((query_rot, query_pass), dim=-1)
    key = torch.cat((key_rot, key_pass), dim=-1)
    return query, key


def attend(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = torch.softmax(scores, dim=-1)  # expect: SC130
    probs = scores
    return probs @ v
