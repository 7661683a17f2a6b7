"""The convention probe decides by behaviour what names and attributes only claim: the layout a module behaves in
(recorded beside the declared one) and a padding mask's convention (its name's contract yields to consistent behaviour,
with a warning, unless --strict)."""

import os

import pytest
from torch import nn

from shapecheck.convention import convention_json
from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify
from shapecheck.testing.probe import discover

from .conftest import EXAMPLES, HERE

SUPPORT = os.path.join(HERE, "..", "support", "conventions.py")
KPM = os.path.join(HERE, "realbugs", "translation_kpm_inverted.py")  # development half: 1 = real token by design
MASKED = ("padding", "reference", "constant_values")


def _module(name: str) -> nn.Module:
    return load_target(f"{SUPPORT}:{name}").obj(8, 2).eval()


@pytest.mark.parametrize("name", ["SeqFirst", "LyingSeqFirst"])
def test_the_layout_a_module_behaves_in_is_recorded_beside_the_declared_one(name):
    conv = discover(_module(name), 8)
    assert conv.batch_first is True and conv.behaves_batch_first is False  # calls stay declared: batch_independence judges
    assert any(n.startswith("layout: seq-first by behaviour") for n in conv.notes)
    assert convention_json(conv)["layout"] == "seq-first" and convention_json(conv)["layout_declared"] == "batch-first"


def test_a_layout_the_behaviour_confirms_adds_no_note():
    conv = discover(nn.MultiheadAttention(8, 2).eval(), 8)  # batch_first=False, and it behaves so
    assert (conv.batch_first, conv.behaves_batch_first) == (False, False)
    assert not any("by behaviour" in n for n in conv.notes if n.startswith("layout"))
    assert discover(_module("BatchFirst"), 8).behaves_batch_first is True


def _kpm(cls: str, **options):
    return verify(load_target(f"{KPM}:{cls}"), VerifyOptions(max_examples=min(EXAMPLES, 6), properties=MASKED, **options))


def test_a_padding_mask_that_means_keep_is_called_so_with_a_warning():
    report = _kpm("Fixed")
    assert report.passed, [(r.name, r.message) for r in report.results if r.status == "failed"]
    assert report.convention["mask"] == {**report.convention["mask"], "name": "key_padding_mask", "kind": "keep", "by": "behaviour"}
    warning = next(n for n in report.notes if n.startswith("warning: key_padding_mask"))
    assert "True/1 = may attend by behaviour" in warning and "contract for this name is True = ignore" in warning


def test_strict_keeps_the_contract_so_the_properties_fail():
    report = _kpm("Fixed", strict=True)
    assert {r.name for r in report.results if r.status == "failed"} >= {"padding"}
    assert report.convention["mask"]["kind"] == "ignore" and report.convention["mask"]["by"] == "contract"


def test_the_inverted_bug_is_still_caught_with_the_users_mask_contract():
    conv = discover(load_target(f"{KPM}:Attention").obj(8, 2).eval(), 8)  # the bug follows torch's contract: no warning
    assert conv.mask_kind == "ignore" and not any(n.startswith("warning") for n in conv.notes)
    caught = {r.name: r.status for r in _kpm("Attention", mask="keep").results}  # the user's --mask keep is the contract
    assert caught["padding"] == "failed"


def test_the_inverted_padding_mutant_warns_by_default():
    spec = os.path.join(HERE, "mutants", "padding_inverted.py") + ":Attention"
    report = verify(load_target(spec), VerifyOptions(max_examples=min(EXAMPLES, 6), properties=("padding",)))
    assert any(n.startswith("warning: key_padding_mask: True/1 = may attend by behaviour") for n in report.notes)
    strict = verify(load_target(spec), VerifyOptions(max_examples=min(EXAMPLES, 6), properties=("padding",), strict=True))
    assert [r.status for r in strict.results] == ["failed"]
