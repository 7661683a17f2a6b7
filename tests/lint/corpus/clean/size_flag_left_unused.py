"""A benchmark helper that picks a flex-attention score modification by name; it unpacks the problem's sizes from
its ``shape`` argument (a tuple of ints) and computes a decoding flag it never reads: a Python bool of two sizes,
not a mask, so nothing an attention needed is lost."""

from typing import Callable, Optional


def pick_score_mod(kind: str, shape: tuple[int, int, int, int, int, int]) -> Optional[Callable]:
    B, Hq, M, Hkv, N, D = shape
    is_decoding = M == 1

    def relative_bias(score, b, h, m, n):
        return score + (m - n)

    def head_bias(score, b, h, m, n):
        return score + 2 * h

    # the causal and sliding-window variants take a block mask instead of a score modification
    return {"noop": None, "causal": None, "rel": relative_bias, "head_bias": head_bias}[kind]
