"""The one vocabulary of axis names used across shapecheck.

Annotations (``Float[Tensor, "batch seq_q d_model"]``), shape comments, lint
messages, verify counterexamples and report rows all use these names.
``SYNONYMS`` maps the names the seed posts and popular codebases use onto them.
"""

from __future__ import annotations

AXES: dict[str, str] = {
    "batch": "independent examples in a batch (seed 004: B; bsz)",
    "seq": "tokens of a sequence in self-attention, where queries and keys share a length",
    "seq_q": "query positions, the output length (seed 004: T; tgt_len)",
    "seq_k": "key/value positions, the input length (seed 004: F; src_len)",
    "heads": "attention heads (seed 004: N; num_heads, h, num_attention_heads)",
    "d_model": "model width, the residual stream (seed 004: E = N*H; embed_dim, hidden_size)",
    "d_head": "per-head width when queries, keys and values share it (seed 004: H; head_dim)",
    "d_k": "per-head width of queries and keys",
    "d_v": "per-head width of values",
    "d_ff": "inner width of the position-wise feed-forward network",
    "d_in": "width of the input to a block whose input and model widths may differ",
    "vocab": "vocabulary size",
    "segments": "segment (token type) vocabulary size",
    "classes": "output classes of a classification head",
}

SYNONYMS: dict[str, str] = {
    "B": "batch", "bsz": "batch", "batch_size": "batch", "N_batch": "batch",
    "T": "seq_q", "tgt_len": "seq_q", "L": "seq_q",
    "F": "seq_k", "S": "seq_k", "src_len": "seq_k",
    "n": "seq", "seq_len": "seq",
    "h": "heads", "nh": "heads", "num_heads": "heads", "n_heads": "heads", "n_head": "heads",
    "nhead": "heads", "num_attention_heads": "heads",
    "E": "d_model", "C": "d_model", "embed_dim": "d_model", "hidden_size": "d_model",
    "n_embd": "d_model", "dim": "d_model", "model_dim": "d_model", "emb_size": "d_model",
    "hs": "d_head", "head_dim": "d_head", "attention_head_size": "d_head", "head_size": "d_head",
    "vocab_size": "vocab",
}


def canonical(name: str) -> str:
    """The vocabulary name for ``name`` (itself when it is already one, or unknown)."""
    return name if name in AXES else SYNONYMS.get(name, name)
