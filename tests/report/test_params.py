"""Parameter counts on the meta device against released models, torch's modules and the paper's Table 3."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from shapecheck.counting import formulas as f
from shapecheck.counting.params import assign_parameters, count_parameters, on_meta, tied_parameters
from shapecheck.report import resolve_config

from .helpers import report as build_report

transformers = pytest.importorskip("transformers")


def _hf_count(factory) -> int:
    with torch.device("meta"):
        return count_parameters(factory())


@pytest.mark.parametrize("preset,hf", [
    ("bert-base", dict()),
    ("bert-large", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)),
])
def test_bert_presets_equal_transformers_bert_model(preset, hf):
    report = build_report(resolve_config(preset=preset, seq_len=4))
    expected = _hf_count(lambda: transformers.BertModel(transformers.BertConfig(**hf)))
    assert report.total["params"] == expected


@pytest.mark.parametrize("preset,hf", [
    ("gpt2", dict()),
    ("gpt2-medium", dict(n_embd=1024, n_layer=24, n_head=16)),
    ("gpt2-large", dict(n_embd=1280, n_layer=36, n_head=20)),
    ("gpt2-xl", dict(n_embd=1600, n_layer=48, n_head=25)),
])
def test_gpt2_presets_equal_transformers_gpt2_model(preset, hf):
    report = build_report(resolve_config(preset=preset, seq_len=4))
    expected = _hf_count(lambda: transformers.GPT2Model(transformers.GPT2Config(**hf)))
    assert report.total["params"] == expected


def test_bert_base_matmul_flops_equal_flop_counter_on_transformers_eager_bert():
    from torch.utils.flop_counter import FlopCounterMode

    report = build_report(resolve_config(preset="bert-base", seq_len=16, batch=2))
    with torch.device("meta"):
        hf = transformers.BertModel(transformers.BertConfig(attn_implementation="eager")).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        hf(torch.zeros(2, 16, dtype=torch.long, device="meta"))
    assert report.total["flops"] == counter.get_total_flops()


@pytest.mark.parametrize("model,torch_stack", [
    ("encoder", lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048), 6, enable_nested_tensor=False)),
    ("decoder", lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(512, 8, 2048), 6)),
])
def test_stacks_equal_torch_transformer_stacks(model, torch_stack):
    report = build_report(resolve_config(model, seq_len=4))
    assert report.total["params"] == count_parameters(on_meta(torch_stack))


def test_encoder_decoder_equals_nn_transformer_plus_one_shared_embedding():
    report = build_report(resolve_config(preset="transformer-base", seq_len=4))
    torch_model = on_meta(lambda: nn.Transformer(512, 8, 6, 6, 2048, batch_first=True))
    final_norms = 2 * 2 * 512  # nn.Transformer always ends both stacks with a LayerNorm; post-norm ours do not
    assert report.total["params"] == count_parameters(torch_model) - final_norms + 37000 * 512


TABLE_3 = [  # Vaswani et al. 2017, Table 3, "params x 10^6"
    (dict(preset="transformer-base"), 65),
    (dict(preset="transformer-big"), 213),
    (dict(preset="transformer-base", d_k=16), 58),  # row (B)
    (dict(preset="transformer-base", d_k=32), 60),  # row (B)
]


def _millions(flags) -> float:
    return build_report(resolve_config(seq_len=4, **flags)).total["params"] / 1e6


@pytest.mark.parametrize("flags,millions", TABLE_3)
def test_table_3_parameter_column_within_the_stated_convention(flags, millions):
    """Our convention (README): one shared 37000 x d_model table (section 3.4), biases and LayerNorm gains
    included, sinusoidal positions free. The paper does not state its exact vocabulary; every row lands
    within 2.1M of its figure (63.1, 214.3, 56.0, 58.4 against 65, 213, 58, 60)."""
    assert abs(_millions(flags) - millions) < 2.1


def test_table_3_row_b_differences_are_exact():
    """Shrinking d_k changes only W_Q and W_K, the same in any counting convention: 65 - 58 and 65 - 60."""
    base = _millions(TABLE_3[0][0])
    assert round(base - _millions(TABLE_3[2][0])) == 65 - 58
    assert round(base - _millions(TABLE_3[3][0])) == 65 - 60


def test_attention_block_formula_is_seed_003s_plus_biases():
    weights_and_biases = f.multi_head_attention().params.subs({f.d_k: f.d_model / f.h, f.d_v: f.d_model / f.h})
    assert weights_and_biases.expand() == 4 * f.d_model**2 + 4 * f.d_model  # 4·h·d_model·d_k + 4·d_model
    general = f.multi_head_attention(bias=False).params
    assert (general - f.h * f.d_model * (2 * f.d_k + 2 * f.d_v)).expand() == 0
    assert count_parameters(nn.MultiheadAttention(512, 8)) == weights_and_biases.subs(f.d_model, 512)


def test_tied_weights_are_counted_once_and_reported():
    report = build_report(resolve_config("encoder-decoder", d_model=16, heads=2, layers=1, vocab=50, seq_len=3))
    from reference_models.transformer import Transformer, TransformerConfig

    module = on_meta(lambda: Transformer(TransformerConfig(vocab=50, d_model=16, layers=1, heads=2, d_ff=64)))
    every_name = sum(p.numel() for _, p in module.named_parameters(remove_duplicate=False))
    assert every_name - report.total["params"] == 2 * 50 * 16  # tgt_embed.tokens and generator share src's table
    assert tied_parameters(module) == [("src_embed.tokens.weight", "tgt_embed.tokens.weight", "generator.weight")]
    assert any(note.startswith("tied: src_embed.tokens.weight") for note in report.notes)


def test_assign_parameters_gives_a_shared_tensor_to_the_first_owner():
    a, b = nn.Linear(3, 4), nn.Linear(3, 4)
    b.weight = a.weight
    model = nn.Sequential(a, b)
    assignment = assign_parameters(model, ["1", "0"])
    assert assignment.counts == {"1": 12 + 4, "0": 4}
    assert assign_parameters(model, ["0"]).unassigned == ["1.bias"]


def test_meta_construction_allocates_nothing():
    model = on_meta(lambda: nn.Linear(100_000, 100_000))
    assert model.weight.is_meta and count_parameters(model) == 100_000 * 100_001


def test_the_attention_row_states_seed_003s_formula_with_biases():
    """h_kv = h: the block's formula is 4·d_head·d_model·h plus biases, and its value is nn.MultiheadAttention's."""
    row = next(r for r in build_report(resolve_config("mha", d_model=512, heads=8, seq_len=4)).rows if r.kind == "attention")
    assert row.params_formula == "4·d_head·d_model·h + 3·d_head·h + d_model"
    assert row.params == row.expected_params == count_parameters(on_meta(lambda: nn.MultiheadAttention(512, 8)))
