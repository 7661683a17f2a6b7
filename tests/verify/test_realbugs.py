"""Capabilities shown on the development half of the real-bug corpus (tests/verify/realbugs/, benchmarks/verify_realbugs.json).

Each case is our own module rebuilding a bug fixed in a public repository, next to its fix. These tests
use development-half cases only (the held-out half is measured by benchmarks/bench_verify_realbugs.py).
"""

import json
import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE

REALBUGS = os.path.join(HERE, "realbugs")
MANIFEST = os.path.join(HERE, "..", "..", "benchmarks", "verify_realbugs.json")
SHOWN = {  # case -> (the options a user passes, the property that catches the bug, what it shows)
    "label_attention_mask_inverted": ({"mask": "keep"}, "padding"),  # --mask keep: the optional mask is passed, not dropped
    "hippogriff_window_ignored": ({"causal": True}, "sliding_window"),  # internal rotary found by behaviour: the fix passes
    "rotary_torch_offset_cache": ({"causal": True}, "kv_cache"),
    "vit_cifar_scale_feats": ({}, "reference"),  # feats / head mapped by role
    "flashinfer_causal_top_left": ({"causal": True}, "kv_cache"),
}


def _report(case: str, cls: str, **options):
    spec = os.path.join(REALBUGS, f"{case}.py") + f":{cls}"
    return verify(load_target(spec), VerifyOptions(max_examples=min(EXAMPLES, 10), **options))


def test_shown_cases_are_in_the_development_half():
    halves = {c["id"]: c["half"] for c in json.load(open(MANIFEST))["cases"]}
    assert len(halves) >= 30 and {halves[c] for c in SHOWN} == {"development"}


@pytest.mark.parametrize("case", sorted(SHOWN))
def test_real_bug_is_caught_and_its_fix_passes(case):
    options, prop = SHOWN[case]
    caught = {r.name: r for r in _report(case, "Attention", **options).results}
    assert caught[prop].status == "failed", (caught[prop].message, [(r.name, r.status) for r in caught.values()])
    fixed = _report(case, "Fixed", **options)
    assert fixed.passed, [(r.name, r.message) for r in fixed.results if r.status == "failed"]


def test_a_module_with_its_own_rotary_is_checked_against_the_standard_rope():
    report = _report("hippogriff_window_ignored", "Fixed", causal=True)
    statuses = {r.name: r.status for r in report.results}
    assert statuses["reference"] == statuses["kv_cache"] == statuses["sliding_window"] == "passed"
    assert any(n.startswith("positions: encoded by the module itself (by behaviour") for n in report.notes)


def test_causal_flag_reaches_the_constructor():
    spec = os.path.join(HERE, "modern", "causal_constructor_flag.py")
    fixed = verify(load_target(spec + ":Fixed"), VerifyOptions(max_examples=min(EXAMPLES, 8), causal=True))
    assert fixed.passed and "causal=True" in fixed.construction
    buggy = {r.name: r.status for r in verify(load_target(spec + ":Attention"), VerifyOptions(max_examples=min(EXAMPLES, 8), causal=True)).results}
    assert buggy["causal"] == "failed"
