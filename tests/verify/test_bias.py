"""A position bias made inside forward (ALiBi from a buffer, a T5-style table parameter): the reference reads the term
the module adds to its scores from the call's data flow and runs, instead of being skipped.

The modules (tests/verify/bias/) are ours: causal ALiBi whose slopes are a buffer, a bidirectional table of learned
biases per clipped distance; one scales by the model width, one merges heads without the transpose.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify
from shapecheck.testing.subject import Subject

from .conftest import EXAMPLES, HERE, SMALL

BIAS = os.path.join(HERE, "bias")
CASES = {"alibi_scale_width": "1/√d_model", "relative_table_merge": ""}


def _spec(name: str, cls: str) -> str:
    return os.path.join(BIAS, f"{name}.py") + f":{cls}"


def _results(spec: str, **options) -> dict:
    report = verify(load_target(spec), VerifyOptions(**{"max_examples": min(EXAMPLES, 10), **SMALL, **options}))
    return {r.name: r for r in report.results}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reference_runs_with_the_module_own_bias(name):
    fixed = _results(_spec(name, "Fixed"))
    assert fixed["reference"].status == "passed", fixed["reference"].reason
    assert not [n for n, r in fixed.items() if r.status == "failed"], {n: r.message for n, r in fixed.items() if r.status == "failed"}
    buggy = _results(_spec(name, "Attention"), properties=("reference",))["reference"]
    assert buggy.status == "failed" and CASES[name] in buggy.message, buggy.reason


def test_a_bias_table_parameter_no_longer_blocks_the_reference_and_means_positions():
    subject = Subject(load_target(_spec("relative_table_merge", "Fixed")), VerifyOptions(**SMALL))
    assert subject.uses_reference and "rel_bias.weight" in subject.scores_bias and "positions" in subject.scores_bias
    assert subject.internal_positions  # permutations do not apply: a relative bias is no bug


def test_a_bias_multiplied_into_the_scores_is_not_read_as_one():
    subject = Subject(load_target(os.path.join(HERE, "modern", "alibi_multiplied.py:Attention")), VerifyOptions(**SMALL))
    assert subject.scores_bias is None
    fixed = Subject(load_target(os.path.join(HERE, "modern", "alibi_multiplied.py:Fixed")), VerifyOptions(**SMALL))
    assert fixed.scores_bias and "argument" in fixed.scores_bias  # the ALiBi input, added
