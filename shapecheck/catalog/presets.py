"""Released model sizes by name (``--preset bert-base``), read from the reference models' own configs.

``PRESETS[name]`` is a ``Preset``: the kind that builds it (``shapecheck.catalog.kinds``),
its sizes, and where they come from. ``FAMILIES`` groups the kinds that can share
a preset (``--preset bert-base --model bert-lm`` is fine, ``--model gpt`` is not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

from shapecheck.catalog.kinds import KINDS
from shapecheck.catalog.sizes import PROBE, Sizes, make_sizes
from shapecheck.errors import UsageError


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str  # a key of KINDS
    values: Callable[[], dict[str, Any]]  # d_model, heads, layers, d_ff, vocab, max_seq, ...
    source: str = ""

    @property
    def family(self) -> str:
        return KINDS[self.kind].family


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


def _mha() -> dict[str, Any]:
    from reference_models.attention import AttentionConfig

    c = AttentionConfig(512, 8)  # the base Transformer's attention block (Vaswani et al. 2017, 3.2.2)
    return dict(d_model=c.d_model, heads=c.heads, layers=1, d_ff=4 * c.d_model, **FAMILY_DEFAULTS["transformer"])


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("mha", "mha", _mha, "Vaswani et al. 2017, 3.2.2: h = 8, d_model = 512"),
        Preset("bert-base", "bert", lambda: _bert("base"), "Devlin et al. 2019, BERT-base"),
        Preset("bert-large", "bert", lambda: _bert("large"), "Devlin et al. 2019, BERT-large"),
        Preset("gpt2", "gpt", lambda: _gpt2("gpt2"), "Radford et al. 2019, 124M"),
        Preset("gpt2-medium", "gpt", lambda: _gpt2("gpt2-medium"), "Radford et al. 2019, 355M"),
        Preset("gpt2-large", "gpt", lambda: _gpt2("gpt2-large"), "Radford et al. 2019, 774M"),
        Preset("gpt2-xl", "gpt", lambda: _gpt2("gpt2-xl"), "Radford et al. 2019, 1.5B"),
        Preset("transformer-base", "encoder-decoder", lambda: _transformer("base"), "Vaswani et al. 2017, Table 3 base"),
        Preset("transformer-big", "encoder-decoder", lambda: _transformer("big"), "Vaswani et al. 2017, Table 3 big"),
    )
}

FAMILIES: dict[str, tuple[str, ...]] = {
    family: tuple(name for name, kind in KINDS.items() if kind.family == family)
    for family in dict.fromkeys(kind.family for kind in KINDS.values())
}

# Vocabulary and position-table sizes when neither a preset nor a flag gives them.
FAMILY_DEFAULTS: dict[str, dict[str, int]] = {
    "transformer": {"vocab": 37000, "max_seq": 512},  # Vaswani et al. 2017, section 5.1
    "bert": {"vocab": 30522, "max_seq": 512},  # BERT's WordPiece vocabulary
    "gpt": {"vocab": 50257, "max_seq": 1024},  # GPT-2's byte-level BPE
}


def family(kind: str) -> str:
    return KINDS[kind].family


def get_preset(name: str) -> Preset:
    """The preset called ``name``, or a one-line ``UsageError`` naming the presets there are."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]


def preset_sizes(name: str, *, d_model: Optional[int] = None, heads: Optional[int] = None, probe: bool = False) -> Sizes:
    """A preset's ``Sizes``, with d_model/heads overridden, or its small probe (layer count kept)."""
    values = get_preset(name).values()
    values.update({k: v for k, v in (("d_model", d_model), ("heads", heads)) if v})
    return make_sizes({**values, **(PROBE if probe else {})})
