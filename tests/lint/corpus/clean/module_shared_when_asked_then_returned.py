"""Per-stage MLPs shared across the stages only when the caller asks: that branch returns the one-module list, and
the path after it builds one MLP per stage (the shape of a point-cloud transformer's stage builder)."""

import torch.nn as nn


def build_stage_mlps(dim, num_stages, shared):
    if shared:
        return nn.ModuleList([nn.Sequential(nn.Linear(dim, dim), nn.GELU())] * num_stages)
    return nn.ModuleList([nn.Sequential(nn.Linear(dim, dim), nn.GELU()) for _ in range(num_stages)])
