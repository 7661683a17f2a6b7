"""Released model sizes by name, read from the reference models' own config presets.

``PRESETS[name]`` is ``(model kind, sizes)``; ``FAMILIES`` groups the model
kinds that can share a preset (``--preset bert-base --model bert-lm`` is fine,
``--preset bert-base --model gpt`` contradicts itself).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FAMILIES: dict[str, tuple[str, ...]] = {
    "transformer": ("mha", "encoder", "decoder", "encoder-decoder"),
    "bert": ("bert", "bert-lm"),
    "gpt": ("gpt", "gpt-lm"),
}


def family(model: str) -> str:
    return next(name for name, kinds in FAMILIES.items() if model in kinds)


def _transformer(which: str) -> dict[str, Any]:
    from reference_models.transformer import TransformerConfig

    c = getattr(TransformerConfig, which)()
    return dict(d_model=c.d_model, heads=c.heads, layers=c.layers, d_ff=c.d_ff, vocab=c.vocab, max_seq=c.max_seq)


def _bert(which: str) -> dict[str, Any]:
    from reference_models.bert import BertConfig

    c = getattr(BertConfig, which)()
    return dict(d_model=c.d_model, heads=c.heads, layers=c.layers, d_ff=c.d_ff, vocab=c.vocab, max_seq=c.max_seq,
                segments=c.segments)


def _gpt2(name: str) -> dict[str, Any]:
    from reference_models.gpt2 import PRESETS as GPT2_PRESETS

    c = GPT2_PRESETS[name]()
    return dict(d_model=c.d_model, heads=c.heads, layers=c.layers, d_ff=c.d_ff, vocab=c.vocab, max_seq=c.max_seq)


PRESETS: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "bert-base": ("bert", lambda: _bert("base")),
    "bert-large": ("bert", lambda: _bert("large")),
    "gpt2": ("gpt", lambda: _gpt2("gpt2")),
    "gpt2-medium": ("gpt", lambda: _gpt2("gpt2-medium")),
    "gpt2-large": ("gpt", lambda: _gpt2("gpt2-large")),
    "gpt2-xl": ("gpt", lambda: _gpt2("gpt2-xl")),
    "transformer-base": ("encoder-decoder", lambda: _transformer("base")),
    "transformer-big": ("encoder-decoder", lambda: _transformer("big")),
}

# Vocabulary and position-table sizes when neither a preset nor a flag gives them.
FAMILY_DEFAULTS: dict[str, dict[str, int]] = {
    "transformer": {"vocab": 37000, "max_seq": 512},  # Vaswani et al. 2017, section 5.1
    "bert": {"vocab": 30522, "max_seq": 512},  # BERT's WordPiece vocabulary
    "gpt": {"vocab": 50257, "max_seq": 1024},  # GPT-2's byte-level BPE
}
