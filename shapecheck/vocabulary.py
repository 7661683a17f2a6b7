"""The one vocabulary: axis names, constructor roles, forward-argument roles and mask conventions.

Axis names (``AXES``, with the ``SYNONYMS`` the seed posts and popular codebases use)
are used by annotations (``Float[Tensor, "batch seq_q d_model"]``), shape comments,
lint messages, verify counterexamples and report rows. The roles that are sizes use
those names (``d_model``, ``heads``, ``d_head``). Everything that maps a name to a
meaning reads this module: ``shapecheck.target`` (building a module),
``shapecheck.testing.adapt`` (calling it), ``shapecheck.auditing`` (recognising heads),
``shapecheck.lint`` (naming axes in messages), ``@checked`` (binding sizes). It imports
nothing heavy: lint reads it without torch.

    >>> constructor_role("n_embd")
    'd_model'
    >>> forward_role("freqs_cis")
    'rotary'
    >>> MASK_CONVENTIONS["key_padding_mask"]
    'ignore'
"""

from __future__ import annotations

import re

from typing import Any, Literal, Optional

# ---------------------------------------------------------------- axis names

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
SEQUENCE_AXES = ("seq", "seq_q", "seq_k")  # the axes positions run along

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


# ---------------------------------------------------------------- constructor roles

CONSTRUCTOR_ROLES: dict[str, frozenset[str]] = {
    "d_model": frozenset({
        "d_model", "embed_dim", "embed_size", "emb_size", "emb_dim", "hidden_size", "dim", "n_embd", "model_dim",
        "n_embed", "embedding_dim", "d_embed", "n_state", "feats", "query_dim", "d_out", "dim_model", "width",
    }),
    "heads": frozenset({
        "heads", "h", "n_head", "n_heads", "num_heads", "num_attention_heads", "nhead", "query_heads", "num_query_heads",
        "n_query_heads", "attention_heads", "nheads", "num_head", "head", "n_heads_q",
    }),
    "kv_heads": frozenset({
        "num_key_value_heads", "n_kv_heads", "kv_heads", "num_kv_heads", "n_kv_head", "n_query_groups", "num_kv_groups",
        "kv_head", "n_kv",
    }),
    "d_head": frozenset({
        "head_dim", "dim_head", "d_head", "head_size", "d_k", "d_v", "d_kv", "kv_channels", "attention_head_size",
        "head_width", "d_qk",
    }),
    "d_ff": frozenset({
        "d_ff", "ffn_dim", "intermediate_size", "dim_feedforward", "mlp_dim", "n_inner", "ff_dim", "hidden_features",
        "mlp_hidden_dim", "ffn_hidden_size", "d_inner", "ffn_embed_dim", "encoder_ffn_embed_dim",
    }),
    "rotary_dim": frozenset({"rotary_dim", "rope_dim", "rotary_emb_dim"}),
    "dropout": frozenset({
        "dropout", "p", "attn_dropout", "attention_dropout", "att_dropout", "dropout_p", "dropout_rate", "attn_pdrop",
        "attention_probs_dropout_prob", "attn_drop", "drop", "attn_dropout_p", "resid_pdrop", "resid_dropout",
        "proj_drop", "proj_dropout", "hidden_dropout_prob", "hidden_dropout", "dropout_prob", "attn_drop_rate", "drop_rate",
    }),
    "causal": frozenset({"causal", "is_causal", "is_decoder_causal", "use_causal_mask", "masked", "autoregressive"}),
    "window": frozenset({"window_size", "sliding_window", "window", "local_window", "attention_window", "local_window_size"}),
    "max_seq": frozenset({
        "block_size", "max_seq_len", "max_seq_length", "max_position_embeddings", "n_positions", "context_length",
        "max_len", "max_length", "seq_len", "n_ctx", "max_batch_seq", "context_size",
    }),
    "bias": frozenset({"bias", "use_bias", "qkv_bias", "proj_bias", "add_bias", "attn_bias", "attention_bias", "with_bias"}),
    "layers": frozenset({"n_layer", "n_layers", "num_hidden_layers", "num_layers", "depth", "layers", "n_blocks"}),
    "vocab": frozenset({"vocab_size", "n_vocab", "vocab", "num_tokens", "ntoken"}),
    "layer_index": frozenset({"layer_idx", "layer_id", "layer_number", "layer_index", "block_idx"}),
    "attention_type": frozenset({"attention_type"}),
}
"""Role -> the parameter names that carry it. Size roles are axis names (``AXES``) where one exists."""

# Names that are a width in attention code but often something else (an MLP's ``hidden_dim`` is d_ff):
# they take ``d_model`` only when the signature has no unambiguous width name, and a replaced default is always shown.
AMBIGUOUS_WIDTHS = frozenset({"hidden", "hidden_dim", "d_hidden", "n_filters", "input_dim", "d_in", "input_size", "in_features", "in_dim"})

# The value a required parameter of these roles gets when the caller gives no size for it.
ROLE_FALLBACKS: dict[str, Any] = {
    "dropout": 0.0, "causal": False, "bias": True, "layer_index": 0, "attention_type": "global", "max_seq": 64,
}

CONFIG_PARAMETERS = ("config", "args", "cfg", "params", "conf", "model_args", "hparams")
"""Constructor parameters that take a config object (GPTConfig, ModelArgs, a transformers config)."""

SIZE_ROLES = tuple(role for role in CONSTRUCTOR_ROLES if role in AXES)  # d_model, heads, d_head


def constructor_role(name: str, default: Any = None) -> Optional[str]:
    """The role of constructor parameter ``name`` (its ``default`` decides dropout modules and ``*drop*`` floats)."""
    for role, names in CONSTRUCTOR_ROLES.items():
        if name in names:
            return role
    if name in AMBIGUOUS_WIDTHS:
        return "d_model"
    if _is_dropout_module(default) or ("drop" in name and isinstance(default, float)):
        return "dropout"
    return None


def _is_dropout_module(value: Any) -> bool:
    return type(value).__name__ in ("Dropout", "Dropout1d", "Dropout2d") and hasattr(value, "p")


# ---------------------------------------------------------------- forward roles

ForwardRole = Literal[
    "query", "key", "value", "memory", "mask", "causal", "weights", "positions", "cache_position", "rotary", "alibi",
    "position_bias", "cache", "use_cache", "start_pos", "residual", "head_mask", "encoder_mask", "mems",
]

ROTARY_HALVES = {"cos": 0, "sin": 1}  # a rotary table passed as two arguments (litgpt): which half each takes

FORWARD_ROLES: dict[str, tuple[str, ...]] = {
    "query": ("query", "q", "x", "hidden_states", "hidden", "inputs", "input", "src", "tgt", "queries", "inp", "tokens_emb"),
    "key": ("key", "k", "keys"),
    "value": ("value", "v", "values"),
    "memory": ("encoder_hidden_states", "key_value_states", "memory", "context", "kv", "x_kv", "enc", "encoder_output", "cond"),
    "mask": ("key_padding_mask", "src_key_padding_mask", "padding_mask", "encoder_padding_mask", "mask", "attention_mask", "attn_mask",
             "src_mask"),
    "causal": ("causal", "is_causal"),
    "weights": ("need_weights", "output_attentions", "return_attention", "return_attn", "return_weights"),
    "positions": ("position_ids", "positions", "pos", "input_pos", "pos_ids"),
    "cache_position": ("cache_position",),
    "rotary": ("position_embeddings", "freqs_cis", "rotary_pos_emb", "rotary_emb", "rope", "freqs", "cos_sin", "pos_emb", "rope_cache",
               *ROTARY_HALVES),
    "alibi": ("alibi", "alibi_bias"),
    "position_bias": ("position_bias", "rel_pos_bias", "relative_position_bias"),
    "cache": ("past_key_value", "past_key_values", "layer_past", "cache", "kv_cache", "past", "past_kv"),
    "use_cache": ("use_cache",),
    "start_pos": ("start_pos", "offset", "input_pos_offset"),
    "residual": ("residual",),
    "head_mask": ("head_mask", "layer_head_mask"),
    "encoder_mask": ("encoder_attention_mask", "memory_key_padding_mask", "memory_mask", "context_mask"),
    "mems": ("mems", "mem", "memories", "prev_mems"),  # Transformer-XL: earlier hidden states (or a cache: decided by behaviour)
}
"""Forward argument role -> the names that carry it, in order of preference."""

MaskConvention = Literal["keep", "ignore", "additive"]
MASK_CONVENTIONS: dict[str, MaskConvention] = {
    "key_padding_mask": "ignore", "src_key_padding_mask": "ignore", "padding_mask": "ignore",  # torch: True = padding
    "encoder_padding_mask": "ignore",  # fairseq: True = padding
    "attn_mask": "ignore", "src_mask": "keep",  # torch's attn_mask: True = not allowed
    "mask": "keep", "attention_mask": "keep",  # SDPA / most research code: True or 1 = may attend
}

# Mask names whose convention a public API fixes, so lint trusts the name (verify probes behaviour instead).
KEEP_MASK_NAMES = frozenset({"attention_mask", "input_mask", "encoder_attention_mask"})  # 1 = may attend
PADDING_MASK_NAMES = frozenset({"key_padding_mask", "src_key_padding_mask", "tgt_key_padding_mask",
                                "memory_key_padding_mask"})  # True = padding (torch's nn.Transformer*)
"""A mask name's usual convention; the module's probed behaviour wins (``shapecheck.testing.adapt``)."""
MASK_TEXT: dict[MaskConvention, str] = {"keep": "True/1 = may attend", "ignore": "True = ignore", "additive": "additive float"}
PADDING_MASKS = ("key_padding_mask", "src_key_padding_mask", "padding_mask", "encoder_padding_mask")  # (batch, seq_k) by convention
# The padding token's id, whatever object holds it (``self.pad_id``, ``config.pad_token_id``, ``padding_idx``):
# ``ids == pad`` is True at the padding, the positions a mask built from it leaves out.
PADDING_ID = re.compile(r"^(pad|padding)(_token)?(_id|_idx|_index|_value)?$")


# Name parts that give a forward argument its role when no exact name matches (real code: past_key_value_state,
# past_kv_cache_entry, layer_past_kv, kv_cache_entry, cached_kv).
FORWARD_ROLE_PARTS: dict[str, tuple[str, ...]] = {"cache": ("past_key_value", "past_kv", "layer_past", "kv_cache", "cached_kv")}


def forward_role(name: str) -> Optional[str]:
    """The role of forward argument ``name`` (an exact name, else a name part), or None."""
    exact = next((role for role, names in FORWARD_ROLES.items() if name in names), None)
    return exact or next((role for role, parts in FORWARD_ROLE_PARTS.items() if any(p in name.lower() for p in parts)), None)


def pick(names: list[str], role: str) -> Optional[str]:
    """The first of ``role``'s names present in ``names``, else the first whose name has one of the role's parts."""
    exact = next((n for n in FORWARD_ROLES[role] if n in names), None)
    return exact or next((n for n in names if any(p in n.lower() for p in FORWARD_ROLE_PARTS.get(role, ()))), None)
