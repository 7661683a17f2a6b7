"""The buggy corpus is flagged at the marked lines, one file per rule; the correct corpus is silent."""

from __future__ import annotations

import pytest

from shapecheck.lint import lint_file, lint_paths
from shapecheck.lint.messages import CODES, RULES

from .helpers import CORPUS, EVERY_RULE, ROOT, SEEDS, expected_marks

BUGGY = sorted((CORPUS / "buggy").glob("*.py"))
CLEAN = sorted((CORPUS / "clean").glob("*.py"))


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.stem)
def test_buggy_file_is_flagged_exactly_at_marked_lines(path):
    marks = expected_marks(path)
    assert marks, f"{path.name} has no '# expect: CODE' marker"
    found = {(f.line, f.code) for f in lint_file(str(path), EVERY_RULE)}
    assert found == marks


def test_every_analysis_rule_has_a_buggy_file():
    covered = {code for path in BUGGY for _, code in expected_marks(path)}
    rules = {r.code for r in RULES if r.code.startswith("SC1")}
    assert rules <= covered, f"rules without a buggy corpus file: {sorted(rules - covered)}"


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.stem)
def test_correct_file_has_no_finding(path):
    assert lint_file(str(path), EVERY_RULE) == []


# The line of each seed module's defect (tests/corpus/seeds/README.md lists them).
SEED_BUGS = {
    "seed000_self_attention.py": {(42, "SC111")},  # nn.Dropout(attention_probs_dropout_prob): never defined
    # score = scores.masked_fill(...); softmax(score): unbound with mask=None, its default; SC108 says so, and SC183,
    # which would say it of line 23, leaves it to SC108
    "seed001_attention.py": {(22, "SC108")},
    "seed001_attention_constructible.py": {(22, "SC108")},
    "seed002_multihead.py": {(58, "SC112")},  # permute(0, 2, 1, 3).contiguous().view(tgt_len, bsz, embed_dim)
}


@pytest.mark.parametrize("name", sorted(SEED_BUGS))
def test_seed_modules_are_flagged_at_their_defect(name):
    found = {(f.line, f.code) for f in lint_file(str(SEEDS / name)) if f.severity in ("error", "warning")}
    assert found == SEED_BUGS[name]


def test_seed_messages_name_the_axes():
    (finding,) = lint_file(str(SEEDS / "seed002_multihead.py"))
    assert "[batch, seq_q, heads, d_head]" in finding.message and "seq_q before batch" in finding.message
    (finding,) = [f for f in lint_file(str(SEEDS / "seed001_attention.py")) if f.code == "SC108"]
    assert "'score'" in finding.message and "'scores'" in finding.message and "line 23" in finding.message


def test_reference_models_package_is_clean():
    """The whole package directory, so that modules added later are covered too."""
    files, findings = lint_paths([str(ROOT / "reference_models")])
    assert files >= 2
    assert [f for f in findings if f.severity != "info"] == []


def test_codes_are_unique_and_stable():
    assert len(set(CODES)) == len(CODES)
    assert CODES[:3] == ("SC001", "SC002", "SC003")
