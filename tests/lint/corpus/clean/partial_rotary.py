"""Partial rotary done right: the rotated half is concatenated with the half that is not rotated; a softmax
replaced only on one path after it is read."""

import math

import torch


def apply_rotary(q, k, cos, sin):
    return q * cos + q.flip(-1) * sin, k * cos + k.flip(-1) * sin


def partial_rotary(query, key, cos, sin, rotary_dims):
    query_rot, query_pass = query[..., :rotary_dims], query[..., rotary_dims:]
    key_rot, key_pass = key[..., :rotary_dims], key[..., rotary_dims:]
    query_rot, key_rot = apply_rotary(query_rot, key_rot, cos, sin)
    query = torch.cat((query_rot, query_pass), dim=-1)
    key = torch.cat((key_rot, key_pass), dim=-1)
    return query, key


def attend(q, k, v, dropout):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    probs = torch.softmax(scores, dim=-1)
    probs = dropout(probs)
    return probs @ v
