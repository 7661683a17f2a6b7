"""A hint at the likely bug class, read from which property failed and the shrunk counterexample.

Hypothesis shrinks towards heads=1, seq=1, batch=1, so a minimal counterexample
with ``heads=2`` means the property holds with one head: the bug is in what
differs between heads (the split/merge layout, the per-head scale).
"""

from __future__ import annotations

from typing import Any

_BY_PROPERTY = {
    "output_shape": "the output shape or the call itself is wrong: check the reshapes against (batch, seq_q, d_model)",
    "input_dependence": "the attention step is missing: a placeholder output, the input returned as is, "
    "or a result computed and then dropped",
    "content_weights": "the weights do not depend on q·k: scores never computed, softmax over a constant, "
    "or a mean over keys standing in for attention",
    "deterministic_eval": "dropout active in eval mode: F.dropout(..., training=self.training) or an nn.Dropout module",
    "batch_independence": "outputs mix batch items: a view/reshape that merges batch with seq or heads "
    "(or a sequence-first module run batch-first: try --layout seq-first)",
    "permutation": "queries or keys are mixed across positions: the head split/merge layout (view without transpose)",
    "causal": "the causal mask is off by one or flipped: tril keeps j <= i (diagonal=0), triu is the future",
    "padding": "the mask convention (True = keep vs True = pad), a mask applied to the query axis, "
    "or a mask tiled in the wrong batch/head order",
    "weights_normalised": "softmax over the wrong axis (dim=-1 is the key axis)",
    "reference": "the scale (√d_k, not √d_model), values projected from the wrong input, or a mask hiding the diagonal",
    "gradients": "a parameter is unused, or a -inf fill makes NaN gradients",
    "fully_masked_rows": "a -inf fill with a plain softmax makes NaN rows and gradients: use finfo(dtype).min "
    "or zero rows with no visible key",
    "low_precision": "a fill value such as -1e9 overflows float16: use torch.finfo(scores.dtype).min",
    "half_precision_masks": "masks summed in half precision overflow: finfo(dtype).min added twice (causal + padding), or to a "
    "negative score, is -inf and a row with no visible key turns NaN; clamp the summed mask at finfo.min or masked_fill once",
    "kv_cache": "with a cache the queries are the last positions: the causal mask must be built for (seq_q, past + seq_q) "
    "with the queries offset by the cache length, and rotary positions must start at the cache length",
    "rotary": "positions must enter as relative ones only: rotate q and k (not v) with the same cos/sin, in one layout; "
    "add an ALiBi or relative bias to the scores (never multiply)",
    "positions_matter": "the positional input never reaches the scores: rotated q/k computed but not used, "
    "or rotary applied along the head axis instead of the sequence",
    "grouped_heads": "each kv head serves heads // kv_heads consecutive query heads: repeat_interleave over the head axis "
    "(transformers' repeat_kv), never tile, sum or average query groups",
    "padding_right": "a padding mask built on the query axis, or not passed down to every layer: the key mask is (batch, 1, 1, seq_k)",
    "padding_left": "with left padding, position ids must count real tokens only, and the mask must hide the pads on the key axis",
    "future_independence": "the model's causal mask is missing, flipped or off by one, or it is combined wrongly with the padding mask",
    "cross_attention": "keys and values come from the memory: reshape them with its length (memory.size(1)), not the query's",
    "sliding_window": "the window keeps keys j with i - w < j <= i: check the off-by-one in the band mask",
    "cache_offset": ("cached keys must keep the positions they were given: rotate keys before caching them (or rotate the "
                     "cached ones at their own positions, not from 0), and take decoding positions from the caller, not the cache length"),
    "mems": ("with a memory of m tokens the queries are positions m..m+n-1: offset the causal mask (key j visible to query i "
             "when j <= i + m) and the relative positions by m"),
    "window_padding": ("a key is hidden when the window OR the padding hides it: join two hide-masks (True = masked) with |, "
                       "two keep-masks with &, and keep the window when a padding mask is given"),
}


def _identity(counterexample: dict[str, Any]) -> bool:
    perms = [counterexample.get(k) for k in ("query_permutation", "key_permutation") if counterexample.get(k) is not None]
    return bool(perms) and all(list(p) == sorted(p) for p in perms)


def hint(name: str, counterexample: dict[str, Any], reason: str, passed: frozenset[str] = frozenset()) -> str:
    """One line: what the minimal sizes (and the properties that held, ``passed``) say, then the usual suspects."""
    heads, seq_q, seq_k = counterexample.get("heads", 1), counterexample.get("seq_q", 1), counterexample.get("seq_k", 1)
    general = _BY_PROPERTY.get(name, "")
    if "raised" in reason:
        general = "the module raised on this input: " + _BY_PROPERTY["output_shape"]
    if name == "reference" and "it matches the scale" in reason:
        return "the softmax scale: scores are scaled by " + reason.rsplit("it matches the scale ", 1)[1].removesuffix(" instead") + \
            " where 1/√d_k (the head size) is expected: set the scale from the head size, after the head split"
    if "NaN" in reason and name != "half_precision_masks":
        return "NaN in the output: a -inf fill on a row with no visible key, or an overflow; " + general
    if name == "permutation" and _identity(counterexample):
        return "fails with the identity permutation: the output depends on something besides the tokens (state, randomness)"
    if name in ("reference", "permutation", "output_shape", "batch_independence") and "raised" not in reason:
        if heads >= 2 and name == "reference" and "permutation" in passed:
            return "fails only with heads >= 2 while permutations hold: look at what differs per head, e.g. scaling by √d_model instead of √d_k"
        if heads >= 2 and max(seq_q, seq_k) >= 2:
            return "fails only with heads >= 2 and seq >= 2: look at the head split/merge layout (a view without transpose)"
        if heads >= 2:
            return "fails only with heads >= 2: look at what differs per head, e.g. scaling by √d_model instead of √d_k"
    if seq_q != seq_k and "raised" in reason:
        return "fails only with seq_q != seq_k: keys or values reshaped with the query length? " + general
    if name == "reference" and seq_q != seq_k:
        return "fails only with seq_q != seq_k: values projected from the key, or keys reshaped with the query length"
    return general
