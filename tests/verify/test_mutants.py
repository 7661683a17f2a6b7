"""Every mutant (one real bug each) is caught by default settings, with a small minimal counterexample.

The expected properties follow from the bug, not from our output: a head-layout bug
breaks permutation equivariance and the reference, a mask bug breaks padding, and so on.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, SEEDS, SMALL, mutant

CAUGHT_BY = {
    "merge_without_transpose": {"permutation", "reference"},
    "split_without_transpose": {"permutation", "reference"},
    "softmax_query_axis": {"causal", "padding", "weights_normalised", "reference", "permutation"},
    "scale_d_model": {"reference"},
    "padding_inverted": {"padding"},  # with --strict (STRICT): by behaviour alone it is a module whose mask means keep
    "padding_query_axis": {"batch_independence", "padding", "output_shape"},
    "mask_tiled_wrong_order": {"batch_independence", "padding"},
    "fill_1e9_float16": {"low_precision"},
    "causal_leak": {"causal"},
    "causal_flipped": {"causal"},
    "no_self_attention": {"permutation", "reference"},
    "dropout_in_eval": {"deterministic_eval"},
    "seq_first": {"output_shape", "batch_independence"},
    "keys_query_length": {"output_shape"},
    "values_from_key": {"reference"},
}


def _first_failure(spec: str, **options):
    report = verify(load_target(spec), VerifyOptions(max_examples=EXAMPLES, fail_fast=True, **{**SMALL, **options}))
    failed = [r for r in report.results if r.status == "failed"]
    return report, failed[0] if failed else None


def _small(found) -> bool:
    return found["heads"] <= 2 and found["batch"] <= 3 and max(found["seq_q"], found["seq_k"]) <= 3


# A padding mask read against its name's contract behaves like a module whose mask means keep by design: the default
# run follows the behaviour with a warning (tests/verify/test_probe_convention.py), --strict holds the name's contract.
STRICT = {"padding_inverted"}


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_mutant_is_caught_with_a_small_counterexample(name):
    report, failure = _first_failure(mutant(name), **({"strict": True} if name in STRICT else {}))
    assert not report.passed and failure is not None, f"{name} passed every property"
    assert failure.name in CAUGHT_BY[name], f"{name}: first failure {failure.name}: {failure.message}"
    assert _small(failure.counterexample), failure.counterexample
    assert failure.hint


def test_head_layout_bugs_need_two_heads_and_say_so():
    _, failure = _first_failure(mutant("merge_without_transpose"))
    assert failure.counterexample["heads"] == 2 and max(failure.counterexample["seq_q"], failure.counterexample["seq_k"]) == 2
    assert "heads >= 2" in failure.hint and "split/merge" in failure.hint


def test_scale_bug_needs_two_heads():
    _, failure = _first_failure(mutant("scale_d_model"))
    assert failure.counterexample["heads"] == 2 and "√d_k" in failure.hint  # one head: √d_model == √d_k


def test_low_precision_names_the_dtype():
    _, failure = _first_failure(mutant("fill_1e9_float16"))
    assert failure.counterexample["dtype"] == "float16" and "overflow" in failure.message


def test_neg_inf_fill_warns_by_default_and_fails_with_strict():
    report, failure = _first_failure(mutant("neg_inf_plain_softmax"))
    assert report.passed and failure is None
    warning = next(r for r in report.results if r.name == "fully_masked_rows")
    assert warning.status == "warning" and "NaN" in warning.message
    assert warning.counterexample["mask"].split("/")[0] == "0" * warning.counterexample["seq_k"]
    strict, failure = _first_failure(mutant("neg_inf_plain_softmax"), strict=True)
    assert not strict.passed and failure.name == "fully_masked_rows"


def test_seed001_as_written_is_caught():
    report, failure = _first_failure(os.path.join(SEEDS, "seed001_attention_constructible.py") + ":MultiHeadedAttention")
    assert failure is not None and "UnboundLocalError" in failure.message  # no mask: `score` is never bound
    assert failure.counterexample["mask"] == "none"
    assert _small(failure.counterexample) and failure.counterexample["batch"] == 1  # any call without a mask fails


def test_seed002_as_written_mixes_batch_items():
    spec = os.path.join(SEEDS, "seed002_multihead.py") + ":MultiheadAttention"
    report, failure = _first_failure(spec)
    assert failure is not None and _small(failure.counterexample)  # default settings (batch-first) already fail
    _, failure = _first_failure(spec, layout="seq-first")  # its own layout: the head merge mixes items
    assert failure.name == "batch_independence" and failure.counterexample["batch"] == 2
    assert _small(failure.counterexample)
    assert "mix batch items" in failure.hint
