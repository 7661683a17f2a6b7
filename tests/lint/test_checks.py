"""Checks that declare the codes they report (``@on(event, reports=...)``) are skipped when a run selects none of
them: they report nothing else, and skipping them changes no finding."""

from __future__ import annotations

import functools

import pytest

from shapecheck.lint import lint_file, lint_source
from shapecheck.lint.checks import CHECKS
from shapecheck.lint.config import LintConfig

from .helpers import CORPUS, EVERY_RULE

FILES = sorted((CORPUS / "buggy").glob("*.py")) + sorted((CORPUS / "clean").glob("*.py"))
DECLARED = [check for checks in CHECKS.values() for check in checks if check.reports]


def test_the_opt_in_checks_declare_their_codes():
    assert {"SC107", "SC127", "SC130", "SC136", "SC138", "SC150", "SC151", "SC152", "SC165", "SC166", "SC173"} <= {
        code for check in DECLARED for code in check.reports}


def test_a_declared_check_reports_only_its_codes(monkeypatch):
    reported: dict[str, set[str]] = {}

    def watched(check):
        @functools.wraps(check)
        def run(scope, event):
            before = len(scope.findings)
            check(scope, event)
            reported.setdefault(check.__name__, set()).update(f.code for f in scope.findings[before:])
        run.reports = check.reports
        return run

    for event, checks in CHECKS.items():
        monkeypatch.setitem(CHECKS, event, [watched(c) if c.reports else c for c in checks])
    for path in FILES:
        lint_file(str(path), EVERY_RULE)
    assert reported, "no declared check ran"
    for check in DECLARED:
        assert reported.get(check.__name__, set()) <= check.reports, check.__name__
    assert any(reported.values()), "the corpus gives the declared checks nothing to report"


@pytest.mark.parametrize("config", [LintConfig(), LintConfig(select=("SC101", "SC106")), LintConfig(ignore=("SC1",))],
                         ids=["defaults", "select", "ignore"])
def test_skipping_the_checks_a_run_leaves_out_changes_no_finding(config):
    for path in FILES:
        everything = [f for f in lint_file(str(path), EVERY_RULE) if config.selects(f.code, f.path)]
        assert lint_file(str(path), config) == everything, path.name


def test_the_tensor_method_table_holds_every_method_of_the_installed_torch():
    """SC179 calls a method no entry of the table names a typo; a torch that adds methods must add them here."""
    torch = pytest.importorskip("torch")
    from shapecheck.lint.tensor_attributes import TENSOR_ATTRIBUTES

    installed = {name for name in dir(torch.Tensor) if not (name.startswith("__") and name.endswith("__"))}
    assert installed - TENSOR_ATTRIBUTES == set()
    assert {"masked_fill", "masked_fill_", "softmax", "transpose"} <= TENSOR_ATTRIBUTES


def test_the_torch_keyword_table_holds_every_keyword_of_the_installed_torch():
    """SC186 refuses a keyword the table does not list for a torch function: a torch that adds one must add it here
    (``python -m tests.support.torch_keywords``)."""
    pytest.importorskip("torch")
    from shapecheck.lint.torch_keywords import TORCH_KEYWORDS

    from ..support.torch_keywords import installed

    now = installed()
    missing = {name: sorted(kws - set(TORCH_KEYWORDS[name].split())) for name, kws in now.items()
               if name in TORCH_KEYWORDS and not kws <= set(TORCH_KEYWORDS[name].split())}
    assert missing == {}
    assert {"torch.cat", "torch.sum", "torch.nn.functional.softmax", "torch.matmul"} <= set(TORCH_KEYWORDS)
    assert {"axis", "keepdims", "dim", "keepdim"} <= set(TORCH_KEYWORDS["torch.sum"].split())


def test_every_weightless_module_holds_nothing_on_the_installed_torch():
    """SC184 lets one object repeat in a stack where it is one of these: each, built with no argument, holds no
    parameter, buffer or submodule."""
    nn = pytest.importorskip("torch.nn")
    from shapecheck.lint.checks.layers import WEIGHTLESS

    for name in sorted(WEIGHTLESS):
        module = getattr(nn, name)()
        assert not [*module.parameters(), *module.buffers(), *module.children()], name


def test_a_method_of_an_older_torch_is_known_and_its_typo_is_named():
    """Named tensors left torch in 2.13 (torch 2.11 has them): code written for a release before is no typo, and a
    letter off one of their methods is reported against it."""
    source = ("import torch\n\ndef f():\n    y = torch.randn(2, 3).refine_names('N', 'C')\n"
              "    return y.align_to('C', 'N'), y.rename(None), torch.randn(2, 3).refine_name('N', 'C')\n")
    found = [(f.code, f.line) for f in lint_source(source, "named.py")]
    assert found == [("SC179", 5)]
    assert lint_source(source, "named.py")[0].hint == "call the method meant: refine_names"
