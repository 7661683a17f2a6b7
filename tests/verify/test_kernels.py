"""Attention without a softmax (issue 20): the softmax reference steps aside, decided from the module's behaviour, and
the properties every normalised attention keeps (constant values, one key) run instead.

The modules (tests/verify/kernels/non_softmax.py) are linear, ReLU and sigmoid attention written for these tests, and a
linear attention whose normaliser still counts the masked keys.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

KERNELS = os.path.join(HERE, "kernels", "non_softmax.py")
MODERN = os.path.join(HERE, "modern")


def _report(spec: str, **options):
    return verify(load_target(spec), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))


def _statuses(report) -> dict:
    return {r.name: r for r in report.results}


@pytest.mark.parametrize("cls", ["Linear", "Relu", "Sigmoid"])
def test_correct_non_softmax_attention_passes_and_the_reference_says_why_it_did_not_run(cls):
    report = _report(f"{KERNELS}:{cls}")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    reference = _statuses(report)["reference"]
    assert reference.status == "skipped" and "not softmax attention" in reference.reason
    assert "reference" in report.coverage["not_run"]


def test_linear_attention_keeps_the_properties_of_normalised_attention():
    found = _statuses(_report(f"{KERNELS}:Linear"))
    assert found["constant_values"].status == found["one_key"].status == "passed"
    assert "one vector added to every key" in found["reference"].reason  # normalised, but not softmax: a linear kernel


@pytest.mark.parametrize("cls", ["Relu", "Sigmoid"])
def test_unnormalised_attention_is_told_by_behaviour_and_its_normalised_properties_skipped(cls):
    report = _report(f"{KERNELS}:{cls}")
    found = _statuses(report)
    assert found["constant_values"].status == found["one_key"].status == "skipped"
    assert "not affine" in found["one_key"].reason
    assert any(n.startswith("kernel: not normalised attention") for n in report.notes)


def test_masked_keys_left_in_the_normaliser_fail_constant_values():
    found = _statuses(_report(f"{KERNELS}:MaskNumeratorOnly", properties=("constant_values",)))["constant_values"]
    assert found.status == "failed" and "same token" in found.message and "0" in found.counterexample["mask"]


def test_softmax_modules_keep_the_reference_and_pass_the_new_properties():
    found = _statuses(_report(os.path.join(MODERN, "window_off_by_one.py") + ":Fixed",
                              properties=("reference", "constant_values", "one_key")))
    assert {r.status for r in found.values()} == {"passed"}, [(r.name, r.message) for r in found.values()]


def test_softmax_over_the_queries_still_fails_the_reference():  # a bug, not another kernel: a query shift leaves it unchanged
    found = _statuses(_report(os.path.join(HERE, "mutants", "softmax_query_axis.py") + ":Attention", properties=("reference",)))
    assert found["reference"].status == "failed"


def test_values_projected_from_the_keys_still_fail_the_reference():  # a key shift moves every output by one vector: softmax
    found = _statuses(_report(os.path.join(HERE, "mutants", "values_from_key.py") + ":Attention", properties=("reference",)))
    assert found["reference"].status == "failed"


def test_the_decision_is_a_declared_field_of_the_subject_taken_once():
    from shapecheck.testing.properties import not_softmax
    from shapecheck.testing.subject import Subject

    subject = Subject(load_target(f"{KERNELS}:Linear"), VerifyOptions(**SMALL))
    assert (subject.non_softmax, subject.non_softmax_decided) == (None, False)
    reason = not_softmax(subject)
    assert "not softmax attention" in reason and (subject.non_softmax, subject.non_softmax_decided) == (reason, True)
    subject.non_softmax = "decided before"  # asked again: the stored decision, not a second run
    assert not_softmax(subject) == "decided before"
