"""The Llama-family presets equal transformers' classes built on meta from the published config.json values."""

from __future__ import annotations

import pytest
import torch

from shapecheck.catalog import PRESETS, build_on_meta
from shapecheck.counting.tree import Settings, model_report

transformers = pytest.importorskip("transformers")

# The published config.json fields that size each model (the hub's meta-llama/, mistralai/, Qwen/ repositories).
LLAMA_2 = dict(vocab_size=32000, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=32, intermediate_size=11008)
PUBLISHED = {
    "llama-2-7b": ("LlamaForCausalLM", "LlamaConfig", LLAMA_2),
    "llama-2-13b": ("LlamaForCausalLM", "LlamaConfig", dict(LLAMA_2, hidden_size=5120, num_hidden_layers=40,
                                                            num_attention_heads=40, num_key_value_heads=40, intermediate_size=13824)),
    "llama-2-70b": ("LlamaForCausalLM", "LlamaConfig", dict(LLAMA_2, hidden_size=8192, num_hidden_layers=80,
                                                            num_attention_heads=64, num_key_value_heads=8, intermediate_size=28672)),
    "llama-3-8b": ("LlamaForCausalLM", "LlamaConfig", dict(LLAMA_2, vocab_size=128256, num_key_value_heads=8,
                                                           intermediate_size=14336, rope_theta=500000.0)),
    "mistral-7b": ("MistralForCausalLM", "MistralConfig", dict(LLAMA_2, num_key_value_heads=8, intermediate_size=14336,
                                                              sliding_window=4096)),
    "mixtral-8x7b": ("MixtralForCausalLM", "MixtralConfig", dict(LLAMA_2, num_key_value_heads=8, intermediate_size=14336,
                                                                num_local_experts=8, num_experts_per_tok=2)),
    "qwen2-0.5b": ("Qwen2ForCausalLM", "Qwen2Config", dict(vocab_size=151936, hidden_size=896, num_hidden_layers=24,
                                                           num_attention_heads=14, num_key_value_heads=2,
                                                           intermediate_size=4864, tie_word_embeddings=True)),
}


def theirs(name: str):
    model_class, config_class, values = PUBLISHED[name]
    config = getattr(transformers, config_class)(**values)
    with torch.device("meta"):
        return getattr(transformers, model_class)(config)


def ours(name: str):
    return build_on_meta(name)


def unique(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def test_every_llm_preset_is_in_the_one_catalogue_and_checked_here():
    assert {name for name, preset in PRESETS.items() if preset.kind == "llama"} == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_params_equal_the_transformers_class(name):
    assert unique(ours(name)) == unique(theirs(name))


def test_llama_2_7b_has_its_published_count_with_the_lm_head():
    assert unique(ours("llama-2-7b")) == 6_738_415_616


def _rotary_flops(model, report) -> int:
    """FLOPs counted on the model's rotary-table modules (transformers' ``*RotaryEmbedding``). How the
    cos/sin table is built varies between transformers releases (a matmul of the inverse frequencies
    with the positions in 5.17: 2·S·d_head/2 FLOPs; elementwise in later ones), so it is compared apart."""
    paths = {path for path, module in model.named_modules() if type(module).__name__.endswith("RotaryEmbedding")}
    return sum(row.flops for row in report.rows if row.path in paths)


@pytest.mark.parametrize("name", ["llama-2-7b", "mistral-7b", "mixtral-8x7b", "qwen2-0.5b"])
def test_report_totals_equal_those_of_the_transformers_class(name):
    settings = Settings(batch=1, seq_len=16)
    built = theirs(name)
    mine, reference = model_report(ours(name), name, settings), model_report(built, name, settings)
    for key in ("params", "active_params"):
        assert mine.total[key] == reference.total[key], key
    table = _rotary_flops(built, reference)
    d_head = built.config.hidden_size // built.config.num_attention_heads
    assert 0 <= table <= 2 * settings.seq_len * d_head // 2  # at most the 5.17 matmul
    assert mine.total["flops"] == reference.total["flops"] - table
    assert mine.agrees and reference.agrees
