"""Modern attention bugs, each next to its fixed twin: the bug is caught with a small counterexample, the twin passes.

The modules (tests/verify/modern/) are Llama-style attention written for these tests: rotary
cos/sin from the caller, grouped kv heads, a (k, v) cache, a causal mask, an optional window.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

MODERN = os.path.join(HERE, "modern")
CAUGHT_BY = {
    "kv_cache_mask_length": {"kv_cache"},
    "rotary_offset_ignored": {"kv_cache"},
    "kv_repeat_order": {"grouped_heads"},  # 4 heads over 2 kv heads: tiling and repeating differ
    "query_groups_summed": {"reference", "grouped_heads"},
    "scale_by_heads": {"reference"},
    "sdpa_dropout_in_eval": {"deterministic_eval"},
    "mask_after_softmax": {"padding", "weights_normalised"},
    "window_off_by_one": {"reference", "sliding_window"},
    "cross_keys_query_length": {"output_shape"},
    "optional_context_keys": {"cross_attention"},  # self-attention is right; only a context of another length shows it
    "fill_not_masking": {"permutation", "causal", "padding"},  # nothing is masked: not even causal any more
    "rotary_pairs_sin_cos": {"reference", "rotary"},  # rotate-half on pairs-expanded tables: no longer relative
    "rotary_result_dropped": {"reference", "positions_matter"},  # order-blind: causal, cache and shifts all hold
    "qk_norm_key_skipped": {"reference"},  # the reference applies the module's own q_norm / k_norm
    "packed_qkv_per_head": {"reference"},  # one Linear packed per head: read by head counts
    "mask_2d_weak_fill": {"padding", "constant_values"},
    "alibi_multiplied": {"rotary"},  # the offset shift covers ALiBi and relative-bias inputs as well as rotary  # only reachable through torch's 2-D (seq_q, seq_k) attn_mask
}


def _verify(name: str, cls: str, **options):
    spec = os.path.join(MODERN, f"{name}.py") + f":{cls}"
    return verify(load_target(spec), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_bug_is_caught_small_and_its_twin_passes(name):
    report = _verify(name, "Attention", fail_fast=True)
    failed = [r for r in report.results if r.status == "failed"]
    assert failed, f"{name} passed every property"
    first = failed[0]
    assert first.name in CAUGHT_BY[name], (first.name, first.message)
    found = first.counterexample
    assert found["batch"] <= 3 and max(found["seq_q"], found["seq_k"]) <= 4 and found["heads"] <= 4, found
    twin = _verify(name, "Fixed", max_examples=min(EXAMPLES, 8))  # every property: fewer examples each
    assert twin.passed, [(r.name, r.message, r.counterexample) for r in twin.results if r.status == "failed"]


def test_cache_mask_bug_needs_a_decoding_step_and_says_so():
    found = next(r for r in _verify("kv_cache_mask_length", "Attention", properties=("kv_cache",)).results)
    assert found.status == "failed" and found.counterexample["prefill"] < found.counterexample["seq_q"] == 2
    assert "cache" in found.hint and "offset" in found.hint


def test_tiled_kv_heads_need_two_kv_heads_of_a_group_of_two():
    found = next(r for r in _verify("kv_repeat_order", "Attention", properties=("grouped_heads",)).results)
    assert found.status == "failed" and (found.counterexample["heads"], found.counterexample.get("d_head")) >= (4, 1)
    assert "repeat_interleave" in found.hint


def test_window_off_by_one_names_the_extra_key():
    found = next(r for r in _verify("window_off_by_one", "Attention", properties=("sliding_window",)).results)
    assert found.status == "failed" and "with window 2" in found.message and "depends on key" in found.message


def test_the_twin_exercises_every_modern_property():
    statuses = {r.name: r.status for r in _verify("window_off_by_one", "Fixed").results}
    assert {statuses[n] for n in ("kv_cache", "rotary", "grouped_heads", "sliding_window", "reference", "causal")} == {"passed"}


def test_gptj_style_sin_cos_pairs_are_followed_by_the_reference():
    statuses = {r.name: r.status for r in _verify("rotary_pairs_sin_cos", "Fixed").results}
    assert statuses["reference"] == statuses["rotary"] == "passed"  # (sin, cos), half-width, adjacent pairs


def test_order_blind_rotary_fails_positions_matter_and_its_twin_passes():
    found = next(r for r in _verify("rotary_result_dropped", "Attention", properties=("positions_matter",)).results)
    assert found.status == "failed" and "ignores the rotary input" in found.message
    twin = next(r for r in _verify("rotary_result_dropped", "Fixed", properties=("positions_matter",)).results)
    assert twin.status == "passed"


def test_head_counts_the_module_refuses_are_discarded_not_failed():
    report = _verify("kv_heads_must_match", "Fixed")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    statuses = {r.name: r.status for r in report.results}
    assert statuses["reference"] == statuses["causal"] == "passed"
    assert statuses["grouped_heads"] == "skipped"  # every draw has fewer kv heads than heads: none it takes


def test_qk_norm_is_followed_by_the_reference():
    statuses = {r.name: r.status for r in _verify("qk_norm_key_skipped", "Fixed").results}
    assert statuses["reference"] == "passed"


def test_packed_per_head_qkv_is_read_and_the_scale_bug_named():
    statuses = {r.name: r.status for r in _verify("packed_qkv_per_head", "Fixed").results}
    assert statuses["reference"] == "passed"
    found = next(r for r in _verify("packed_qkv_per_head", "Attention", properties=("reference",)).results)
    assert found.status == "failed" and "query_key_value (" in found.message and "1/√d_model" in found.hint


def test_causal_qkv_module_refusing_other_key_lengths_is_self_attention():
    report = _verify("qkv_causal_window", "Fixed")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    statuses = {r.name: r.status for r in report.results}
    assert statuses["sliding_window"] == statuses["causal"] == statuses["reference"] == "passed"
    assert any("refuses keys of another length: self-attention" in n for n in report.notes)
    found = next(r for r in _verify("qkv_causal_window", "Attention", properties=("sliding_window",)).results)
    assert found.status == "failed"


def test_a_cache_argument_is_found_by_its_role():
    assert next(r for r in _verify("cache_named_otherwise", "Fixed", properties=("kv_cache",)).results).status == "passed"
    assert next(r for r in _verify("cache_named_otherwise", "Attention", properties=("kv_cache",)).results).status == "failed"


def test_an_optional_mask_verify_cannot_build_is_dropped_not_refused():
    report = _verify("mask_of_lengths", "Fixed")
    assert report.passed and any("attention_mask refused every mask verify builds" in n for n in report.notes)
    assert {r.name: r.status for r in report.results}["reference"] == "passed"


def test_torch_2d_attn_mask_shape_is_tried_when_3d_and_4d_are_refused():
    report = _verify("mask_2d_weak_fill", "Fixed")
    assert any("shape (seq_q, seq_k)" in n for n in report.notes), report.notes
    statuses = {r.name: r.status for r in report.results}
    assert statuses["padding"] == statuses["batch_independence"] == "passed"  # items with other masks run one by one
