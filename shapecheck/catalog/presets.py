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
    dtype: Optional[str] = None  # the published config.json's torch_dtype (report's default element type)

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


def _llama(**published: Any) -> Callable[[], dict[str, Any]]:
    """A Llama-family config.json's sizes, in shapecheck's names (hidden_size -> d_model ...)."""
    names = {"vocab_size": "vocab", "hidden_size": "d_model", "num_hidden_layers": "layers",
             "num_attention_heads": "heads", "num_key_value_heads": "kv_heads", "intermediate_size": "d_ff",
             "sliding_window": "window", "num_local_experts": "experts", "num_experts_per_tok": "top_k",
             "tie_word_embeddings": "tie_embeddings", "qkv_bias": "qkv_bias"}
    values = {names[key]: value for key, value in published.items()}
    return lambda: dict(max_seq=4096, **values)


# The published config.json of each model (the hub's meta-llama/, mistralai/, Qwen/ repositories).
LLAMA_2_7B = dict(vocab_size=32000, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                  num_key_value_heads=32, intermediate_size=11008)
LLAMA_2_13B = dict(LLAMA_2_7B, hidden_size=5120, num_hidden_layers=40, num_attention_heads=40,
                   num_key_value_heads=40, intermediate_size=13824)
LLAMA_2_70B = dict(LLAMA_2_7B, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
                   num_key_value_heads=8, intermediate_size=28672)
LLAMA_3_8B = dict(LLAMA_2_7B, vocab_size=128256, num_key_value_heads=8, intermediate_size=14336)
MISTRAL_7B = dict(LLAMA_2_7B, num_key_value_heads=8, intermediate_size=14336, sliding_window=4096)
MIXTRAL_8X7B = dict(LLAMA_2_7B, num_key_value_heads=8, intermediate_size=14336, num_local_experts=8,
                    num_experts_per_tok=2)
QWEN2_0_5B = dict(vocab_size=151936, hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                  num_key_value_heads=2, intermediate_size=4864, tie_word_embeddings=True)
LLM_CONFIGS = {"llama-2-7b": LLAMA_2_7B, "llama-2-13b": LLAMA_2_13B, "llama-2-70b": LLAMA_2_70B,
               "llama-3-8b": LLAMA_3_8B, "mistral-7b": MISTRAL_7B, "mixtral-8x7b": MIXTRAL_8X7B,
               "qwen2-0.5b": QWEN2_0_5B}
# Their config.json's "torch_dtype": the element type a --config of the same file defaults to.
PUBLISHED_DTYPES = {"llama-2-7b": "float16", "llama-2-13b": "float16", "llama-2-70b": "float16",
                    "llama-3-8b": "bfloat16", "mistral-7b": "bfloat16", "mixtral-8x7b": "bfloat16",
                    "qwen2-0.5b": "bfloat16"}
_SOURCES = {"llama-2-7b": "Touvron et al. 2023, Llama 2 7B", "llama-2-13b": "Touvron et al. 2023, Llama 2 13B",
            "llama-2-70b": "Touvron et al. 2023, Llama 2 70B (GQA, 8 kv heads)",
            "llama-3-8b": "Meta 2024, Llama 3 8B", "mistral-7b": "Jiang et al. 2023, Mistral 7B v0.1 (window 4096)",
            "mixtral-8x7b": "Jiang et al. 2024, Mixtral 8x7B (8 experts, top 2)",
            "qwen2-0.5b": "Qwen team 2024, Qwen2-0.5B (q/k/v biases, tied embeddings)"}


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
        *(Preset(name, "llama", _llama(**config, qkv_bias=name.startswith("qwen2")), _SOURCES[name],
                 PUBLISHED_DTYPES[name])
          for name, config in LLM_CONFIGS.items()),
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
    "llama": {"vocab": 32000, "max_seq": 4096},  # Llama 2's SentencePiece vocabulary and context
}


def family(kind: str) -> str:
    return KINDS[kind].family


def get_preset(name: str) -> Preset:
    """The preset called ``name``, or a one-line ``UsageError`` naming the presets there are."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]


def preset_sizes(name: str, *, d_model: Optional[int] = None, heads: Optional[int] = None, probe: bool = False) -> Sizes:
    """A preset's ``Sizes``, with d_model/heads overridden, or its small probe."""
    values = get_preset(name).values()
    values.update({k: v for k, v in (("d_model", d_model), ("heads", heads)) if v})
    return make_sizes({**values, **(PROBE if probe else {})})
