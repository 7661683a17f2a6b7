"""Closed forms: crossover lengths, symbolic sequence lengths, repeated layers, the fvcore cross-check."""

from __future__ import annotations

import warnings

import pytest
import sympy
import torch

from shapecheck.catalog import KINDS
from shapecheck.counting import closed_forms as cf
from shapecheck.counting import formulas as f
from shapecheck.counting.dispatch import count_flops
from shapecheck.report import build, resolve_config

from .helpers import report as build_report, small


def _layer_terms(d_ff=None, d_k=None, d_v=None):
    values = {f.d_ff: d_ff or f.d_ff, f.d_k: d_k or f.d_k, f.d_v: d_v or f.d_v}
    attention = f.multi_head_attention().flops
    return attention.subs(values), (attention + f.feed_forward().flops).subs(values)


def test_crossovers_are_2_and_6_d_model():
    """QKᵀ and AV cost 4·B·S²·h·d_k; the projections 8·B·S·d_model·h·d_k; the FFN 16·B·S·d_model²."""
    attention, layer = _layer_terms(d_ff=4 * f.d_model, d_k=f.d_model / f.h, d_v=f.d_model / f.h)
    assert cf.crossover_length(attention) == 2 * f.d_model
    assert cf.crossover_length(layer) == 6 * f.d_model
    general_attention, _ = _layer_terms()
    assert cf.crossover_length(general_attention) == 2 * f.d_model  # whatever d_k, d_v, h


def test_the_tree_crossovers_are_the_same_lengths():
    """The report's crossovers come from the recognised parts' closed forms: 2·d_model and 6·d_model again."""
    from shapecheck.counting.anatomy import parts

    module, _, _ = build(resolve_config("encoder", d_model=64, heads=4, layers=1, seq_len=8))
    found = cf.crossovers(parts(module), ["layers.0"])
    assert found["attention"]["formula"] == 2 * cf.d_model
    assert found["attention"]["value"] == 128 and found["layer"]["value"] == 6 * 64


@pytest.mark.parametrize("d_model,heads", [(16, 2), (24, 3)])
def test_at_the_crossover_measured_quadratic_equals_linear(d_model, heads):
    """Counted, not derived: at S = 2·d_model the attention core equals the projections; at 6·d_model the layer."""
    for seq, model in ((2 * d_model, "mha"), (6 * d_model, "encoder")):
        config = small(model, d_model=d_model, heads=heads, seq_len=seq, batch=1,
                       **({"layers": 1, "d_ff": 4 * d_model} if model == "encoder" else {}))
        module, _, feed = build(config)
        run = feed.runner(module, 1, seq, "meta")
        with torch.no_grad():
            count = count_flops(run, module, ["" if model == "mha" else "layers.0.self_attn"])
        parts = count.by_part()
        quadratic = parts.get("scores", 0) + parts.get("av", 0)
        assert quadratic == count.total - quadratic


def test_report_crossover_matches_the_default_config():
    report = build_report(resolve_config(seq_len=8))
    assert report.crossover["attention"]["value"] == 1024 and report.crossover["layer"]["value"] == 3072


@pytest.mark.parametrize("model", ["encoder", "decoder", "bert-lm", "gpt-lm", "llama"])
def test_symbolic_rows_are_the_polynomials_of_the_numeric_ones(model):
    symbolic = build_report(small(model, seq_len="S"))
    S = sympy.Symbol("S", positive=True, integer=True)
    for seq in (5, 7):
        numeric = build_report(small(model, seq_len=seq))
        assert [r.path for r in symbolic.rows] == [r.path for r in numeric.rows]
        for sym_row, num_row in zip(symbolic.rows, numeric.rows):
            assert sympy.sympify(sym_row.flops).subs(S, seq) == num_row.flops
            if num_row.expected_flops is not None:
                assert sympy.sympify(sym_row.expected_flops).subs(S, seq) == num_row.expected_flops
        assert sympy.sympify(symbolic.total["flops"]).subs(S, seq) == numeric.total["flops"]


@pytest.mark.parametrize("model", sorted(KINDS))
def test_counting_one_layer_per_stack_equals_counting_every_layer(model):
    from shapecheck.counting import measure

    config = small(model, layers=3) if "layers" in KINDS[model].uses else small(model)
    module, _, feed = build(config)
    run = feed.runner(module, config.batch, config.seq_len, "meta")
    once, every = measure.forward(module, run, repeats=True), measure.forward(module, run, repeats=False)
    paths = [p for p, _ in module.named_modules()]
    assert [once.at(p) for p in paths] == [every.at(p) for p in paths]
    assert once.at("") > 0


def test_layers_that_differ_are_not_reused():
    from shapecheck.counting.repeats import identical_stacks
    from shapecheck.counting.params import on_meta
    from reference_models.transformer import Encoder, TransformerConfig

    encoder = on_meta(lambda: Encoder(TransformerConfig(d_model=16, heads=2, d_ff=32, layers=3)))
    assert [s.size for s in identical_stacks(encoder)] == [3]
    encoder.layers[2].train(False)  # one layer in another mode: its ops may differ
    encoder.layers[0].train(True)
    assert identical_stacks(encoder) == []


def test_fvcore_counts_macs_and_misses_fused_attention():
    """fvcore counts one multiply-add as one "flop"; it has no handle for scaled_dot_product_attention."""
    fvcore = pytest.importorskip("fvcore.nn")
    results = {}
    for impl in ("math", "sdpa"):
        config = small("mha", impl=impl)
        kind = config.kind
        module = kind.build(config.sizes).eval()
        inputs = kind.inputs(config.sizes, config.batch, config.seq_len, torch.device("cpu"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = fvcore.FlopCountAnalysis(module, inputs)
            analysis.unsupported_ops_warnings(False)
            results[impl] = analysis.total()
    ours = build_report(small("mha"))
    core = 2 * (2 * 2 * 2 * 5 * 5 * 8)  # QKᵀ and softmax·V, 2·B·h·S·S_k·d_head each, at B=2 h=2 S=5 d_head=8
    assert 2 * results["math"] == ours.total["flops"]
    assert 2 * results["sdpa"] == ours.total["flops"] - core



def test_rows_follow_the_module_tree_whatever_the_attributes_are_called():
    """No row list names a reference model's attributes: renamed submodules keep their formulas and agree."""
    from reference_models.transformer import EncoderLayer, TransformerConfig
    from shapecheck.counting.tree import Settings, model_report

    class Renamed(EncoderLayer):
        self_attn = property(lambda self: self.mixer)
        ffn = property(lambda self: self.channel)

        def __init__(self, config):
            super().__init__(config)
            self.mixer, self.channel = self._modules.pop("self_attn"), self._modules.pop("ffn")

    with torch.device("meta"):
        layer = Renamed(TransformerConfig(d_model=16, heads=2, d_ff=32, layers=1))
    rows = {r.path: r for r in model_report(layer, "Renamed", Settings(batch=2, seq_len=5)).rows}
    assert rows["mixer"].kind == "attention" and rows["channel"].kind == "mlp"
    assert all(rows[p].agrees and rows[p].expected_flops > 0 for p in ("mixer", "channel"))
