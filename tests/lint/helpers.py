"""Shared helpers for the lint tests: lint a snippet and compare the rule classes found."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from shapecheck.lint import lint_source
from shapecheck.lint.config import LintConfig
from shapecheck.lint.messages import OPT_IN, Message

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
SEEDS = ROOT / "tests" / "corpus" / "seeds"
EVERY_RULE = LintConfig(extend_select=tuple(sorted(OPT_IN)))  # the opt-in rules too: each rule's own tests
_EXPECT = re.compile(r"#\s*expect:\s*(SC\d{3})")


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), config=EVERY_RULE)]


def assert_lint(source: str, *expected: type[Message]) -> None:
    """The findings' codes, in order, are exactly those of ``expected``."""
    assert codes(source) == [m.code for m in expected]


def expected_marks(path: Path) -> set[tuple[int, str]]:
    """(line, code) for every ``# expect: CODE`` comment in a corpus file."""
    found = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        found.update((number, code) for code in _EXPECT.findall(line))
    return found
