"""Whole models: transformers models from small configs and a model of our own, with its mask-helper bug."""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE

TINY = os.path.join(HERE, "modern", "tiny_lm.py")


def _statuses(spec: str, **options) -> tuple:
    report = verify(load_target(spec), VerifyOptions(max_examples=min(EXAMPLES, 8), max_seq=4, **options))
    return report, {r.name: r.status for r in report.results}


def test_gpt2_model_passes_every_whole_model_property():
    pytest.importorskip("transformers")
    report, statuses = _statuses("transformers.models.gpt2.modeling_gpt2:GPT2Model")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    assert set(statuses.values()) == {"passed"} and "kv_cache" in statuses and "padding_left" in statuses


def test_bert_model_is_not_causal_and_passes_padding():
    pytest.importorskip("transformers")
    report, statuses = _statuses("transformers.models.bert.modeling_bert:BertModel")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    assert statuses["padding_right"] == statuses["padding_left"] == "passed"
    assert statuses["future_independence"] == statuses["kv_cache"] == "skipped"


def test_padding_mask_on_the_query_axis_is_caught_by_left_padding_and_the_fixed_model_passes():
    report, statuses = _statuses(f"{TINY}:Model")
    failed = next(r for r in report.results if r.status == "failed")
    assert failed.name == "padding_left" and statuses["padding_right"] == "passed"  # causality hides right padding anyway
    assert min(failed.counterexample["lengths"]) < failed.counterexample["seq"] <= 4 and "key axis" in failed.hint
    fixed, _ = _statuses(f"{TINY}:Fixed")
    assert fixed.passed, [(r.name, r.message) for r in fixed.results if r.status == "failed"]
