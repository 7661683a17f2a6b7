"""The pytest entry point: check_attention raises a readable AssertionError with the minimal counterexample."""

import pytest
from torch import nn

from reference_models.attention import MultiHeadAttention
from shapecheck.testing.properties import PROPERTIES
from shapecheck.errors import UsageError
from shapecheck.target import load_target
from shapecheck.testing import check_attention

from .conftest import EXAMPLES, SMALL, mutant


def test_a_correct_class_passes_and_returns_the_report():
    report = check_attention(MultiHeadAttention, max_examples=EXAMPLES, **SMALL)
    assert report.passed and [r.name for r in report.results] == [p.name for p in PROPERTIES]


def test_a_factory_with_its_own_argument_names():
    report = check_attention(lambda embed_dim, num_heads: nn.MultiheadAttention(embed_dim, num_heads, batch_first=True),
                             max_examples=EXAMPLES, **SMALL)
    assert report.passed and "embed_dim" in report.construction


def test_a_bug_raises_with_the_minimal_configuration():
    bad = load_target(mutant("merge_without_transpose"))
    with pytest.raises(AssertionError) as info:
        check_attention(bad, max_examples=EXAMPLES, fail_fast=True, **SMALL)
    text = str(info.value)
    assert "permutation" in text and "minimal: heads=2" in text and "hint:" in text


def test_options_are_validated():
    with pytest.raises(UsageError, match="unknown properties nope"):
        check_attention(MultiHeadAttention, properties=("nope",))
    with pytest.raises(UsageError, match="not an instance"):
        check_attention(MultiHeadAttention(4, 2))


def test_seed_makes_runs_repeatable():
    bad = load_target(mutant("scale_d_model"))
    reports = []
    for _ in range(2):
        with pytest.raises(AssertionError) as info:
            check_attention(bad, max_examples=EXAMPLES, seed=3, properties=("reference",), **SMALL)
        reports.append(str(info.value))
    assert reports[0] == reports[1]


def test_masked_rows_policy_is_checked_against_the_reference():
    # MultiHeadAttention gives zero probabilities to a row with no visible key (documented in reference_models)
    zeros = check_attention(MultiHeadAttention, max_examples=EXAMPLES, properties=("fully_masked_rows",), masked_rows="zeros", **SMALL)
    assert zeros.results[0].status == "passed"
    uniform = check_attention(MultiHeadAttention, max_examples=EXAMPLES, properties=("fully_masked_rows",), masked_rows="uniform", **SMALL)
    assert uniform.results[0].status == "warning" and "uniform policy" in uniform.results[0].message


def test_nothing_checked_raises_instead_of_passing():
    with pytest.raises(AssertionError) as info:
        check_attention(MultiHeadAttention, max_examples=2, properties=("sliding_window",), **SMALL)
    assert "nothing was checked" in str(info.value) and "sliding_window: no sliding window" in str(info.value)
