"""reference_models.llama against transformers' classes built from the same small configs (weights loaded by name)."""

from __future__ import annotations

import pytest
import torch

from reference_models.llama import LlamaConfig, LlamaForCausalLM

transformers = pytest.importorskip("transformers")

SMALL = dict(vocab=61, d_model=32, layers=2, heads=4, kv_heads=2, d_ff=48, eps=1e-6, rope_theta=10000.0)


def _hf_config(cls, config: LlamaConfig, **extra):
    return cls(vocab_size=config.vocab, hidden_size=config.d_model, num_hidden_layers=config.layers,
               num_attention_heads=config.heads, num_key_value_heads=config.kv_heads, intermediate_size=config.d_ff,
               rms_norm_eps=config.eps, rope_theta=config.rope_theta, tie_word_embeddings=config.tie_embeddings,
               attn_implementation="eager", **extra)


def _compare(ours: LlamaForCausalLM, theirs, seq: int) -> None:
    missing, unexpected = ours.load_state_dict(theirs.state_dict(), strict=False)
    assert not missing, missing
    assert all("rotary" in name for name in unexpected), unexpected
    ids = torch.randint(ours.config.vocab, (2, seq), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = theirs.eval()(ids).logits
        got = ours.eval()(ids)
    torch.testing.assert_close(got, expected, atol=2e-5, rtol=2e-5)


def test_llama_with_grouped_query_heads_matches_transformers():
    config = LlamaConfig(**SMALL)
    torch.manual_seed(0)
    _compare(LlamaForCausalLM(config), transformers.LlamaForCausalLM(_hf_config(transformers.LlamaConfig, config)), seq=7)


def test_mistral_sliding_window_matches_transformers():
    config = LlamaConfig(**SMALL, window=3)
    torch.manual_seed(0)
    theirs = transformers.MistralForCausalLM(_hf_config(transformers.MistralConfig, config, sliding_window=3))
    _compare(LlamaForCausalLM(config), theirs, seq=9)


def test_qwen2_qkv_biases_match_transformers():
    config = LlamaConfig(**SMALL, qkv_bias=True)
    torch.manual_seed(0)
    _compare(LlamaForCausalLM(config), transformers.Qwen2ForCausalLM(_hf_config(transformers.Qwen2Config, config)), seq=6)


def test_wrong_width_is_a_shape_error_naming_the_config():
    import shapecheck

    model = LlamaForCausalLM(LlamaConfig(**SMALL))
    with pytest.raises(shapecheck.ShapeError, match=r"d_model=32 \(bound by the config\)"):
        model.model.layers[0].self_attn(torch.randn(1, 3, 16))
