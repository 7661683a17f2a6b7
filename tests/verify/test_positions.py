"""Relative positions with a cache (issue 20): prefill and decode at positions p, p + 1 ... equal the full run at 0, 1 ...

The modules (tests/verify/positions/) are ours: causal attention that rotates q and k itself at the caller's
``position_ids`` with a (keys, values) cache; the bug caches keys before rotation and re-rotates them from position 0,
which the ordinary cache check (decoding from 0) cannot see.
"""

import os

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

POSITIONS = os.path.join(HERE, "positions")


def _results(name: str, cls: str, **options) -> dict:
    spec = os.path.join(POSITIONS, f"{name}.py") + f":{cls}"
    report = verify(load_target(spec), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))
    return {r.name: r for r in report.results}


def test_keys_re_rotated_from_zero_fail_only_with_an_offset():
    found = _results("keys_cached_unrotated", "Attention")
    assert found["kv_cache"].status == "passed" and found["cache_offset"].status == "failed", found["cache_offset"].reason
    assert "positions from 0" in found["cache_offset"].message and "rotate keys before caching" in found["cache_offset"].hint
    assert [n for n, r in found.items() if r.status == "failed"] == ["cache_offset"]


def test_the_correct_module_passes_with_the_offset_checked():
    found = _results("keys_cached_unrotated", "Fixed", max_examples=min(EXAMPLES, 8))
    assert found["cache_offset"].status == found["kv_cache"].status == "passed"
    assert not [n for n, r in found.items() if r.status == "failed"], {n: r.message for n, r in found.items() if r.status == "failed"}


def test_absolute_positions_are_told_by_behaviour_and_skip_the_offset():
    found = _results("_roped", "Absolute", properties=("cache_offset", "kv_cache"))
    assert found["cache_offset"].status == "skipped" and "positions are absolute" in found["cache_offset"].reason
    assert found["kv_cache"].status == "passed"  # the same input name, relative or not: behaviour decides
