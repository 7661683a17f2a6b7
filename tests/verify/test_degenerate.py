"""Modules that only look like attention fail (issue 23, item 6); a correct attention without weights passes.

The modules (tests/verify/degenerate/weightless.py) are softmax(x xᵀ/√d) x without parameters and
its degenerate twins: the input returned, a constant output, uniform weights (causal or not).
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

WEIGHTLESS = os.path.join(HERE, "degenerate", "weightless.py")
CAUGHT_BY = {
    "ReturnsInput": "input_dependence",
    "IgnoresInput": "input_dependence",
    "Uniform": "content_weights",
    "CausalUniform": "content_weights",
}


def _statuses(cls: str, **options) -> dict:
    report = verify(load_target(f"{WEIGHTLESS}:{cls}"), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))
    return {r.name: r for r in report.results}


@pytest.mark.parametrize("cls", sorted(CAUGHT_BY))
def test_a_degenerate_module_fails_its_property(cls):
    found = _statuses(cls)[CAUGHT_BY[cls]]
    assert found.status == "failed" and found.hint, (found.message, found.counterexample)


@pytest.mark.parametrize("cls", ["Attention", "CausalAttention"])
def test_correct_attention_without_weights_passes_and_gradients_is_skipped(cls):
    results = _statuses(cls)
    assert not [r.name for r in results.values() if r.status == "failed"]
    assert results["input_dependence"].status == results["content_weights"].status == "passed"
    assert results["gradients"].status == "skipped" and "no trainable parameters" in results["gradients"].message
