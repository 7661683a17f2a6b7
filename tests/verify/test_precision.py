"""Half precision under stress (issue 20): large logits, left padding and fully masked items in float16 / bfloat16.

The modules (tests/verify/precision/summed_finfo_masks.py) add an additive padding mask to their own causal
mask: summed in float16, finfo.min overflows to -inf and a left pad's row is NaN where float32 is finite.
"""

import os

import pytest
import torch

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

SUMMED = os.path.join(HERE, "precision", "summed_finfo_masks.py")


def _result(cls: str, **options):
    report = verify(load_target(f"{SUMMED}:{cls}"), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, "properties": ("half_precision_masks",), **options}))
    return report.results[0]


def test_summed_finfo_masks_turn_float16_rows_nan_and_fail_with_strict():
    found = _result("Attention", strict=True)
    assert found.status == "failed" and "where float32 is finite" in found.message, found.message
    assert found.counterexample["dtype"] == "float16" and "0" in found.counterexample["mask"]  # a padded, half-precision case
    assert "finfo" in found.hint and "clamp" in found.hint


def test_by_default_a_nan_row_with_no_visible_key_is_a_warning_as_fully_masked_rows_has_it():
    found = _result("Attention")
    assert found.status == "warning" and "no visible key" in found.message and "--strict" in found.message


@pytest.mark.parametrize("cls", ["Fixed", "Sdpa"])
def test_clamped_masks_and_sdpa_pass(cls):
    found = _result(cls, strict=True)
    assert found.status == "passed", (found.message, found.counterexample)


def test_the_old_low_precision_property_misses_it():  # unit-scale logits and no left padding: the stress is what finds it
    assert _result("Attention", properties=("low_precision",)).status == "passed"


def test_a_module_without_half_kernels_is_skipped_with_its_reason(monkeypatch):
    real = torch.Tensor.softmax

    def refuse(self, *args, **kwargs):  # a CPU build without float16 softmax
        if self.dtype in (torch.float16, torch.bfloat16):
            raise RuntimeError(f"\"softmax_lastdim_kernel_impl\" not implemented for '{'Half' if self.dtype == torch.float16 else 'BFloat16'}'")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "softmax", refuse)
    found = _result("Fixed")
    assert found.status == "skipped" and "cannot run in" in found.message and "on this device" in found.message
