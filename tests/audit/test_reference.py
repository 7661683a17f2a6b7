"""Reference models and torch's own modules audit clean; each component's count is torch's own count."""

import pytest
import torch
from torch import nn

from reference_models.attention import AttentionConfig, MultiHeadAttention
from reference_models.bert import BertConfig, BertModel
from reference_models.gpt2 import GPT2Config, GPT2Model
from reference_models.packed import PackedAttentionConfig, PackedMultiheadAttention
from reference_models.transformer import Transformer, TransformerConfig
from shapecheck.auditing import audit


def _torch_count(module: nn.Module, path: str) -> int:
    return sum(p.numel() for p in (module.get_submodule(path) if path else module).parameters())


def _assert_clean(result, module):
    assert result.clean, [(c.path, c.differences) for c in result.mismatches] + [result.dead]
    assert result.liveness.ran, result.liveness.detail
    assert result.totals.total == sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("bias", [True, False])
def test_reference_multi_head_attention_matches_section_3_2_2(bias):
    d = 24
    module = MultiHeadAttention(config=AttentionConfig(d, 4, bias=bias))
    result = audit(module)
    _assert_clean(result, module)
    (block,) = result.components
    assert block.kind == "attention" and block.path == ""
    # 4 projections of d_model x d_model, plus 4·d_model biases (Vaswani et al. 2017, 3.2.2)
    assert block.expected == block.counted == 4 * d * d + (4 * d if bias else 0)
    assert block.formula == ("4·d_model² + 4·d_model" if bias else "4·d_model²")


def test_reference_attention_with_other_head_widths_uses_h_d_k_d_v():
    module = MultiHeadAttention(config=AttentionConfig(16, 2, d_k=4, d_v=6))
    result = audit(module)
    _assert_clean(result, module)
    (block,) = result.components
    assert block.values == {"d_model": 16, "h": 2, "d_k": 4, "d_v": 6}
    # seed 003: h·d_model·(d_q + d_k + 2·d_v) weights, plus 2·h·d_k + h·d_v + d_model biases
    assert block.expected == 2 * 16 * (4 + 4 + 2 * 6) + 2 * 2 * 4 + 2 * 6 + 16


def test_packed_seed002_reference_is_clean():
    module = PackedMultiheadAttention(PackedAttentionConfig(16, 2))
    result = audit(module)
    _assert_clean(result, module)
    assert result.components[0].style.startswith("in_proj_weight")


@pytest.mark.parametrize("name", ["bert", "gpt2", "transformer"])
def test_small_reference_models_are_clean_with_torch_counts(name):
    torch.manual_seed(0)
    module = {
        "bert": lambda: BertModel(BertConfig(vocab=50, d_model=16, layers=2, heads=2, d_ff=32, max_seq=16)),
        "gpt2": lambda: GPT2Model(GPT2Config(vocab=50, max_seq=16, d_model=16, layers=2, heads=2, d_ff=32)),
        "transformer": lambda: Transformer(TransformerConfig(vocab=50, d_model=16, layers=2, heads=2, d_ff=32, max_seq=16)),
    }[name]()
    result = audit(module)
    _assert_clean(result, module)
    assert sum(c.counted for c in result.components) == result.totals.total  # a partition: nothing twice, nothing left
    for component in result.components:
        assert component.counted == sum(module.get_parameter(n).numel() for n in component.parameters)
        if component.kind == "attention":  # its subtree: the block and any norm inside it (BERT's output.LayerNorm)
            inside = sum(c.counted for c in result.components if c.path.startswith(component.path + "."))
            assert component.counted + inside == _torch_count(module, component.path)
    kinds = {c.kind for c in result.components}
    assert {"attention", "feed_forward", "norm", "embedding"} <= kinds


def test_torch_multihead_attention_variants_are_clean():
    for module in (nn.MultiheadAttention(16, 2), nn.MultiheadAttention(16, 2, bias=False),
                   nn.MultiheadAttention(16, 2, add_bias_kv=True), nn.MultiheadAttention(16, 2, kdim=8, vdim=12)):
        result = audit(module)
        _assert_clean(result, module)
        assert result.components[0].counted == result.components[0].expected == _torch_count(module, "")


def test_torch_transformer_encoder_layer_is_clean():
    module = nn.TransformerEncoderLayer(16, 2, dim_feedforward=48)
    result = audit(module)
    _assert_clean(result, module)
    ffn = result.component("", "feed_forward")
    assert ffn.values == {"d_model": 16, "d_ff": 48}
    assert ffn.expected == 2 * 16 * 48 + 48 + 16  # Vaswani et al. 2017, section 3.3
    assert result.component("self_attn").expected == 4 * 16 * 16 + 4 * 16
    assert [c.path for c in result.components if c.kind == "norm"] == ["norm1", "norm2"]


def test_torch_transformer_decoder_layer_is_clean():
    module = nn.TransformerDecoderLayer(16, 2, dim_feedforward=32, batch_first=True)
    result = audit(module, inputs=_decoder_inputs())  # forward(tgt, memory): two inputs
    _assert_clean(result, module)
    assert sorted(c.path for c in result.components if c.kind == "attention") == ["multihead_attn", "self_attn"]


def _decoder_inputs():
    from shapecheck.auditing import Inputs

    return Inputs((torch.randn(2, 3, 16), torch.randn(2, 5, 16)))
