"""Correct modules pass with default settings: ours, torch's, and transformers' (built from a config, no weights)."""

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES


def _verify(spec: str, **options):
    return verify(load_target(spec), VerifyOptions(max_examples=EXAMPLES, **options))


def _statuses(report):
    return {r.name: r.status for r in report.results}


def test_our_multihead_attention_passes_every_property():
    report = _verify("reference_models.attention:MultiHeadAttention")
    assert report.passed, [r for r in report.results if r.status != "passed"]
    statuses = _statuses(report)
    modern = {"kv_cache", "rotary", "positions_matter", "grouped_heads", "sliding_window", "window_padding", "mems", "cache_offset",
              "cross_attention"}  # none of these inputs: skipped
    assert {n for n, s in statuses.items() if s != "passed"} == modern and {statuses[n] for n in modern} == {"skipped"}


@pytest.mark.parametrize("init", [{}, {"batch_first": True}], ids=["seq-first", "batch-first"])
def test_torch_multihead_attention_both_layouts(init):
    report = _verify("torch.nn:MultiheadAttention", init=init)
    statuses = _statuses(report)
    assert report.passed, [r for r in report.results if r.status == "failed"]
    assert statuses["reference"] == statuses["padding"] == statuses["weights_normalised"] == "passed"
    assert statuses["causal"] == "skipped"  # is_causal is only a hint that needs attn_mask


def test_transformers_bert_self_attention():
    pytest.importorskip("transformers")
    report = _verify("transformers.models.bert.modeling_bert:BertSelfAttention")
    statuses = _statuses(report)
    assert report.passed, [r for r in report.results if r.status == "failed"]
    assert statuses["padding"] == statuses["reference"] == statuses["weights_normalised"] == "passed"


@pytest.mark.parametrize("spec", [
    "reference_models.bert:BertSelfAttention",
    "reference_models.packed:PackedMultiheadAttention",  # sequence-first, read from its annotations
    "reference_models.gpt2:CausalSelfAttention",  # causal by construction, detected
])
def test_other_reference_modules(spec):
    report = _verify(spec)
    assert report.passed, [r for r in report.results if r.status == "failed"]


def test_gpt2_attention_is_treated_as_causal():
    statuses = _statuses(_verify("reference_models.gpt2:CausalSelfAttention"))
    assert statuses["causal"] == statuses["reference"] == "passed" and statuses["permutation"] == "skipped"


def test_reference_bert_attention_passes_including_low_precision():
    # BertAttention ends in a TF-style LayerNorm, sqrt(var + 1e-12): eps rounds to 0 in float16,
    # so the norm runs in float32 for half inputs; a width-1 row must stay finite.
    report = _verify("reference_models.bert:BertAttention")
    failed = {r.name for r in report.results if r.status == "failed"}
    assert failed == set()
    assert _statuses(report)["reference"] == "skipped"  # LayerNorm parameters lie outside the projections


def test_transformers_distilbert_self_attention_gets_a_reference():
    pytest.importorskip("transformers")
    report = _verify("transformers.models.distilbert.modeling_distilbert:DistilBertSelfAttention")
    assert report.passed, [r for r in report.results if r.status == "failed"]
    assert _statuses(report)["reference"] == "passed"  # q_lin/k_lin/v_lin + out_lin, from the shared naming table
