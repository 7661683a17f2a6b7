"""Closed forms: crossover lengths, symbolic sequence lengths, repeated layers, the fvcore cross-check."""

from __future__ import annotations

import warnings

import pytest
import sympy
import torch

from shapecheck.counting import formulas as f
from shapecheck.counting.models import MODELS
from shapecheck.report import build_report, resolve_config

from .helpers import count_real, small


def _layer_terms(d_ff=None, d_k=None, d_v=None):
    values = {f.d_ff: d_ff or f.d_ff, f.d_k: d_k or f.d_k, f.d_v: d_v or f.d_v}
    attention = f.multi_head_attention().flops
    return attention.subs(values), (attention + f.feed_forward().flops).subs(values)


def test_crossovers_are_2_and_6_d_model():
    """QKᵀ and AV cost 4·B·S²·h·d_k; the projections 8·B·S·d_model·h·d_k; the FFN 16·B·S·d_model²."""
    attention, layer = _layer_terms(d_ff=4 * f.d_model, d_k=f.d_model / f.h, d_v=f.d_model / f.h)
    assert f.crossover_length(attention) == 2 * f.d_model
    assert f.crossover_length(layer) == 6 * f.d_model
    general_attention, _ = _layer_terms()
    assert f.crossover_length(general_attention) == 2 * f.d_model  # whatever d_k, d_v, h


@pytest.mark.parametrize("d_model,heads", [(16, 2), (24, 3)])
def test_at_the_crossover_measured_quadratic_equals_linear(d_model, heads):
    """Counted, not derived: at S = 2·d_model the attention core equals the projections; at 6·d_model the layer."""
    for seq, model, linear_kinds in ((2 * d_model, "mha", {"projection"}), (6 * d_model, "encoder", {"projection", "ffn"})):
        config = small(model, d_model=d_model, heads=heads, seq_len=seq, batch=1, **({"layers": 1, "d_ff": 4 * d_model} if model == "encoder" else {}))
        sums, _, specs = count_real(config, train=False, grad=False, device="meta")
        quadratic = sum(n for n, s in zip(sums, specs) if s.kind == "attention")
        linear = sum(n for n, s in zip(sums, specs) if s.kind in linear_kinds)
        assert quadratic == linear


def test_report_crossover_matches_the_default_config():
    report = build_report(resolve_config(seq_len=8))
    assert report.crossover["attention"]["value"] == 1024 and report.crossover["layer"]["value"] == 3072


@pytest.mark.parametrize("model", ["encoder", "decoder", "bert-lm", "gpt-lm"])
def test_symbolic_rows_are_the_polynomials_of_the_numeric_ones(model):
    symbolic = build_report(small(model, seq_len="S"))
    for seq in (5, 7):
        numeric = build_report(small(model, seq_len=seq))
        for sym_row, num_row in zip(symbolic.rows, numeric.rows):
            S = sympy.Symbol("S", positive=True, integer=True)
            assert sympy.sympify(sym_row.measured_flops).subs(S, seq) == num_row.measured_flops
            assert sympy.sympify(sym_row.flops).subs(S, seq) == num_row.flops


@pytest.mark.parametrize("model", sorted(MODELS))
def test_counting_one_layer_per_stack_equals_counting_every_layer(model):
    config = small(model, layers=3) if "layers" in MODELS[model].uses else small(model)
    once, every = build_report(config), build_report(config, repeats=False)
    assert [r.measured_flops for r in once.rows] == [r.measured_flops for r in every.rows]
    assert once.agrees and every.stacks == []
    assert bool(once.stacks) == ("layers" in MODELS[model].uses)


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
        kind = MODELS["mha"]
        module = kind.build(config.sizes()).eval()
        inputs = kind.inputs(config.sizes(), config.batch, config.seq_len, torch.device("cpu"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = fvcore.FlopCountAnalysis(module, inputs)
            analysis.unsupported_ops_warnings(False)
            results[impl] = analysis.total()
    ours = build_report(small("mha"))
    core = sum(r.measured_flops for r in ours.rows if r.kind == "attention")
    assert 2 * results["math"] == ours.total["measured_flops"]
    assert 2 * results["sdpa"] == ours.total["measured_flops"] - core
