"""A sliding-window mask built in place: every call is given ``out=``, so it writes into the mask it names and
returns the same tensor; nothing is dropped by leaving the result unassigned."""

import torch


def sliding_window_mask(n: int, window: int) -> torch.Tensor:
    """True where a query may not attend: the future, and keys more than ``window`` positions back."""
    keep = torch.ones(n, n, dtype=torch.bool)
    torch.tril(keep, diagonal=0, out=keep)
    torch.triu(keep, diagonal=-window, out=keep)
    torch.logical_not(keep, out=keep)
    return keep
