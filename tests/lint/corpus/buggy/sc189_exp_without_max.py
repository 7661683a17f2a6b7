"""A softmax written out with no maximum taken off first: the in-place fallback of a chunked attention (ComfyUI
1a4edd19), and a helper that normalises exponentials; both give NaN once a score passes exp's range."""

import torch


def attention_scores(query, key_t, scale):
    scores = torch.baddbmm(torch.empty(1, 1, 1, dtype=query.dtype), query, key_t, alpha=scale, beta=0)
    try:
        probs = scores.softmax(dim=-1)
    except MemoryError:
        torch.exp(scores, out=scores)  # expect: SC189
        summed = torch.sum(scores, dim=-1, keepdim=True)
        scores /= summed
        probs = scores
    return probs


def weights_from(logits):
    e = logits.exp()  # expect: SC189
    return e / e.sum(dim=-1, keepdim=True)
