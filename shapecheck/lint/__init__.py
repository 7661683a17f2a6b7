"""``shapecheck lint``: attention-aware static analysis with named-axis tracking."""

from shapecheck.lint.api import lint_bytes, lint_file, lint_paths, lint_source
from shapecheck.lint.config import LintConfig, load_config
from shapecheck.lint.messages import CODES, RULES, Finding

__all__ = ["CODES", "RULES", "Finding", "LintConfig", "lint_bytes", "lint_file", "lint_paths", "lint_source",
           "load_config"]
