"""Soft-capped logits (Gemma 2's c·tanh(scores / c)): the reference reads the cap from the module's data flow.

The modules (tests/verify/softcap/) are ours: a correct capped attention, one capping the probabilities
instead of the logits, one that forgets the division by the cap.
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify
from shapecheck.testing.subject import Subject

from .conftest import EXAMPLES, HERE, SMALL

SOFTCAP = os.path.join(HERE, "softcap")
GEMMA2 = "transformers.models.gemma2.modeling_gemma2:Gemma2Attention"


def _spec(name: str, cls: str) -> str:
    return os.path.join(SOFTCAP, f"{name}.py") + f":{cls}"


def _statuses(spec: str, **options) -> dict:
    report = verify(load_target(spec), VerifyOptions(**{"max_examples": min(EXAMPLES, 10), **SMALL, **options}))
    return {r.name: (r.status, r.reason) for r in report.results}


def test_the_cap_is_read_from_the_data_flow():
    subject = Subject(load_target(_spec("cap_after_softmax", "Fixed")), VerifyOptions())
    assert subject.softcap == pytest.approx(0.2)
    assert any("soft-cap: tanh(scores / 0.2)" in note for note in subject.notes)


def test_a_cap_after_the_softmax_is_no_cap_of_the_logits():
    assert Subject(load_target(_spec("cap_after_softmax", "Attention")), VerifyOptions()).softcap is None


@pytest.mark.parametrize("name", ["cap_after_softmax", "cap_without_division"])
def test_capping_bug_fails_the_reference_and_the_correct_cap_passes_it(name):
    buggy = _statuses(_spec(name, "Attention"))
    assert buggy["reference"][0] == "failed", buggy["reference"]
    fixed = _statuses(_spec(name, "Fixed"))
    assert fixed["reference"] == ("passed", ""), fixed["reference"]  # not skipped as "not softmax"
    assert not [n for n, (status, _) in fixed.items() if status == "failed"]


def test_gemma2_reference_runs_with_its_own_cap():
    pytest.importorskip("transformers")
    subject = Subject(load_target(GEMMA2), VerifyOptions(init={"attn_logit_softcapping": 0.1}))
    assert subject.softcap == pytest.approx(0.1)  # the config's value, as the forward uses it
    statuses = _statuses(GEMMA2, init={"attn_logit_softcapping": 0.1}, properties=("reference",))
    assert statuses["reference"] == ("passed", "")
