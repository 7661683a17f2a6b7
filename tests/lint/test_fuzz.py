"""lint never crashes: generated programs (hypothesmith), random bytes, deep nesting."""

from __future__ import annotations

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shapecheck.lint import lint_bytes, lint_source
from shapecheck.lint.messages import CODES


def _valid(findings):
    """Well-formed findings, and no gap in the analysis (an internal error is reported, never raised)."""
    return all(f.code in CODES and f.line >= 1 and f.col >= 1 and "internal error" not in f.message
               for f in findings)


# hypothesmith's strategies discard what does not compile, by design; how much depends on the constants hypothesis
# has collected from the modules loaded so far in the worker, so the filtering health check is not this test's point
GRAMMAR = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow, HealthCheck.data_too_large])


@GRAMMAR
@given(hypothesmith.from_grammar())
def test_generated_programs_never_crash(source):
    assert _valid(lint_source(source, "gen.py"))


@GRAMMAR
@given(hypothesmith.from_node())
def test_generated_syntax_trees_never_crash(source):
    assert _valid(lint_source(source, "gen.py"))


@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data):
    assert _valid(lint_bytes(data, "blob.py"))


def test_deeply_nested_expressions_are_reported_not_raised():
    source = "x = " + "+".join(["a.view(1, -1)"] * 3000) + "\n"
    found = lint_source(source, "deep.py")
    assert _valid(found) and {f.code for f in found} <= {"SC001", "SC003", "SC111"}
