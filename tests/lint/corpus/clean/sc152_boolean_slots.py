"""Slots of a state cache to reset, marked in a boolean buffer with index_copy_: a mask of which slots, not keys or
values, so autocast has no dtype to change and nothing needs matching."""

import torch


class StateCache:
    def __init__(self, num_caches: int, size: int):
        self.num_caches = num_caches
        self.pool = torch.zeros(num_caches, size)

    def reset(self, idx: torch.Tensor, mask: torch.Tensor) -> None:
        cache_masks = torch.zeros((self.num_caches,), dtype=torch.bool, device=idx.device)
        cache_masks.index_copy_(0, idx, mask)
        self.pool.masked_fill_(cache_masks.view(-1, 1), 0)
