"""transformers' BertModel and GPT-2 built from configs (no weights downloaded) audit clean with the released totals."""

import pytest
import torch

from shapecheck.auditing import audit

transformers = pytest.importorskip("transformers")

BERT_BASE = 109_482_240  # bert-base-uncased, transformers' BertModel with pooler
GPT2 = 124_439_808  # "gpt2", transformers' GPT2Model (wte tied, no separate head)


def _small_bert():
    config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=12, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=16)
    return transformers.BertModel(config)


def test_bert_base_released_total_and_both_non_embedding_conventions():
    config = transformers.BertConfig()
    with torch.device("meta"):
        model = transformers.BertModel(config)
    result = audit(model, probe=_small_bert())
    assert result.clean and result.liveness.ran, result.liveness.detail
    t, d = result.totals, config.hidden_size
    assert t.total == BERT_BASE
    tables = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * d
    assert t.embedding_tables == tables and t.non_embedding == BERT_BASE - tables
    assert t.embedding_norms == 2 * d and t.pooler == d * d + d
    assert t.non_embedding_strict == BERT_BASE - tables - 2 * d - (d * d + d)
    attention = [c for c in result.components if c.kind == "attention"]
    assert len(attention) == 12 and {c.style for c in attention} == {"query/key/value + dense (BERT)"}
    assert {c.path for c in attention} == {f"encoder.layer.{i}.attention" for i in range(12)}


def test_gpt2_released_total_with_conv1d_projections():
    config = transformers.GPT2Config()
    with torch.device("meta"):
        model = transformers.GPT2Model(config)
    small = transformers.GPT2Model(transformers.GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=12, n_head=2))
    result = audit(model, probe=small)
    assert result.clean and result.liveness.ran, result.liveness.detail
    assert result.totals.total == GPT2
    kinds = [c.kind for c in result.components]
    assert kinds.count("attention") == kinds.count("feed_forward") == 12 and kinds.count("norm") == 25
    assert result.component("h.0.mlp").values == {"d_model": 768, "d_ff": 3072}


def test_gpt2_lm_head_is_tied_to_wte():
    config = transformers.GPT2Config(vocab_size=50, n_positions=16, n_embd=16, n_layer=2, n_head=2)
    model = transformers.GPT2LMHeadModel(config)
    result = audit(model)
    assert result.clean
    (group,) = result.shared
    assert set(group.names) == {"transformer.wte.weight", "lm_head.weight"}
    assert result.totals.total == sum(p.numel() for p in model.parameters())


def test_llama_grouped_query_attention_gated_mlp_and_rms_norms_are_clean():
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    model = transformers.LlamaModel(config)
    result = audit(model)
    assert result.clean and result.liveness.ran, result.liveness.detail
    attn = result.component("layers.0.self_attn")
    assert attn.values == {"d_model": 32, "h": 4, "h_kv": 2, "d_k": 8, "d_v": 8}
    assert attn.expected == 2 * 32 * (4 * 8) + 2 * 32 * (2 * 8)  # W_Q, W_O: h heads; W_K, W_V: h_kv heads; no biases
    assert result.component("layers.0.mlp").expected == 3 * 32 * 64  # gate, up, down (no biases)
    assert result.component("norm").expected == 32  # RMSNorm: a gain only
