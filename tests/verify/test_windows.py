"""A sliding window together with a padding mask (issue 20): the keys hidden are exactly the union of the two.

The modules (tests/verify/windows/) are ours, Mistral style: a causal window built into the module's own mask and
a padding ``attention_mask`` (1 = token). One joins the two hide-masks with & (only keys hidden by both are
hidden), one drops the window when a padding mask is given; both pass sliding_window, which runs without a mask.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

WINDOWS = os.path.join(HERE, "windows")
BUGS = ["window_and_padding_intersected", "window_lost_with_padding"]


def _report(name: str, cls: str, **options):
    spec = os.path.join(WINDOWS, f"{name}.py") + f":{cls}"
    return verify(load_target(spec), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))


@pytest.mark.parametrize("name", BUGS)
def test_window_with_padding_bug_is_caught_with_the_mask_convention_given(name):
    found = next(r for r in _report(name, "Attention", mask="keep", properties=("window_padding",)).results)
    assert found.status == "failed", found.reason
    assert "with window 2" in found.message and "union of the window and the padding" in found.message
    assert found.counterexample["seq_q"] <= 3 and found.counterexample["batch"] == 1, found.counterexample
    assert "|" in found.hint and "padding" in found.hint


@pytest.mark.parametrize("name", BUGS)
def test_the_sliding_window_alone_does_not_see_it(name):
    found = next(r for r in _report(name, "Attention", mask="keep", properties=("sliding_window",)).results)
    assert found.status == "passed"


def test_the_correct_module_passes_with_window_and_padding_checked():
    report = _report("window_lost_with_padding", "Fixed")
    statuses = {r.name: r.status for r in report.results}
    assert report.passed and statuses["window_padding"] == statuses["sliding_window"] == statuses["reference"] == "passed", statuses
    assert not any(n.startswith("positions: ") for n in report.notes)  # a window of 2 is not taken for positions


def test_a_mask_dropped_as_a_switch_says_the_window_may_be_lost():
    found = next(r for r in _report("window_lost_with_padding", "Attention", properties=("window_padding",)).results)
    assert found.status == "skipped" and "window lost when a mask is given" in found.reason and "--mask keep" in found.reason


def test_a_transformers_window_in_the_mask_passes_with_padding():
    pytest.importorskip("transformers")
    spec = "transformers.models.mistral.modeling_mistral:MistralAttention"
    report = verify(load_target(spec), VerifyOptions(**{"max_examples": min(EXAMPLES, 8), **SMALL, "init": {"sliding_window": 2},
                                                        "properties": ("window_padding", "cache_offset")}))
    assert {r.name: r.status for r in report.results} == {"window_padding": "passed", "cache_offset": "passed"}
