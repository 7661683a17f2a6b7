"""Transformer-XL style memory (issue 20): with mems = h_prev the output equals recomputation over [h_prev; h], last rows.

The modules (tests/verify/memory/) are ours: causal attention over [mems; x] with a learned bias per relative
distance; one starts the queries' positions at 0 instead of after the memory, one builds the causal mask without the
memory's offset. Both pass every other property (no other property gives the module a memory).
"""

import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE, SMALL

MEMORY = os.path.join(HERE, "memory")
BUGS = ["memory_mask_not_offset", "memory_positions_not_offset"]


def _report(name: str, cls: str, **options):
    spec = os.path.join(MEMORY, f"{name}.py") + f":{cls}"
    return verify(load_target(spec), VerifyOptions(**{"max_examples": EXAMPLES, **SMALL, **options}))


@pytest.mark.parametrize("name", BUGS)
def test_memory_bug_is_caught_by_mems_alone(name):
    report = _report(name, "Attention")
    failed = [r for r in report.results if r.status == "failed"]
    assert [r.name for r in failed] == ["mems"], [(r.name, r.message) for r in failed]
    assert "recomputing over memory and input together" in failed[0].message and "offset" in failed[0].hint
    assert failed[0].counterexample["memory_length"] >= 1 and failed[0].counterexample["seq_q"] <= 3


def test_the_correct_memory_passes_with_mems_checked():
    statuses = {r.name: r.status for r in _report("memory_mask_not_offset", "Fixed", max_examples=min(EXAMPLES, 8)).results}
    assert statuses["mems"] == statuses["reference"] == statuses["causal"] == "passed", statuses
    assert "failed" not in statuses.values()


def test_a_mems_argument_that_is_a_kv_cache_is_told_by_behaviour_and_not_driven():
    found = next(r for r in _report("_xl", "KVMems", properties=("mems",)).results)
    assert found.status == "skipped" and "may be a KV cache" in found.reason
