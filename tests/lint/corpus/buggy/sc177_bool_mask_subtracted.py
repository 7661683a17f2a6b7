"""``1 - mask`` of a boolean mask: torch refuses to subtract booleans, so the path raises the first time it runs
(the shape of real fixes: an inverted padding mask written as 1 - mask after the mask became boolean)."""

import torch


def masked_scores(scores, ids, pad_id=0):
    valid = ids != pad_id
    bias = (1 - valid)[:, None, None, :] * -10000.0  # expect: SC177
    return scores + bias


def attend(scores, lengths):
    pad = torch.arange(scores.shape[-1], device=scores.device)[None, :] >= lengths[:, None]
    keep = 1 - pad  # expect: SC177
    scores = scores.masked_fill(keep == 0, float("-inf"))
    return scores.softmax(dim=-1)
