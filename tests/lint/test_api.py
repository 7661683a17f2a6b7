"""The API never crashes on bad files, never imports or writes them, applies noqa and pyproject config."""

from __future__ import annotations

import ast

import pytest
from pyflakes import checker, messages

from shapecheck.errors import ConfigError, UsageError
from shapecheck.lint import LintConfig, lint_bytes, lint_file, lint_paths, lint_source, load_config

from .helpers import CORPUS

BUGGY = CORPUS / "buggy"


def test_syntax_error_is_a_finding_at_its_line():
    (finding,) = lint_source("x = 1\ndef f(:\n    pass\n", "bad.py")
    assert (finding.code, finding.line, finding.severity) == ("SC001", 2, "error")
    assert "syntax error" in finding.message


@pytest.mark.parametrize("data,reason", [
    (b"\x00\x01\x02binary", "binary"),
    (b"x = '\xff\xfe'\n", "not valid text"),  # not UTF-8, no coding cookie
    (b"# -*- coding: nonsense -*-\nx = 1\n", "not valid text"),
])
def test_undecodable_and_binary_files_are_findings(data, reason):
    (finding,) = lint_bytes(data, "f.py")
    assert finding.code == "SC001" and reason in finding.message


def test_latin1_file_with_a_coding_cookie_is_read():
    assert lint_bytes("# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1"), "f.py") == []


@pytest.mark.parametrize("data", [b"", b"\n\n   \n"])
def test_empty_file_is_an_info_finding(data):
    (finding,) = lint_bytes(data, "empty.py")
    assert (finding.code, finding.severity) == ("SC002", "info")


@pytest.mark.parametrize("data", [b"", b"\n"])
def test_empty_package_init_is_not_reported(data):
    assert lint_bytes(data, "pkg/__init__.py") == []


def test_a_name_only_in_a_string_annotation_is_not_undefined():
    """String annotations are never evaluated: pyflakes' SC111 there would be a false alarm."""
    assert lint_source("def make() -> 'NotYetDefined':\n    return None\n") == []
    assert [f.code for f in lint_source("def make():\n    return NotYetDefined()\n")] == ["SC111"]
    postponed = "from __future__ import annotations\ndef make(cache: Missing | None = None):\n    return cache\n"
    assert lint_source(postponed) == []
    assert [f.code for f in lint_source(postponed.split("\n", 1)[1])] == ["SC111"]  # evaluated at def time


_TYPING_CALLS = [  # a name bound only by a bare annotation counts inside a postponed annotation, nowhere else
    "from typing import cast\nT: int\ny = cast(T, 1)\n",
    "from __future__ import annotations\nfrom typing import cast\nT: int\ny = cast(T, 1)\n",
    "from __future__ import annotations\nimport typing\nT: int\ny = typing.cast(T, missing)\n",
    "from __future__ import annotations\nfrom typing import TypeVar\nB: int\nV = TypeVar('V', bound=B)\n",
    "from typing import NamedTuple\nP = NamedTuple('P', [('x', Missing)])\n",
    "def f(x: Missing = other) -> None:\n    return g(x, key=absent)\n",
]


@pytest.mark.parametrize("source", _TYPING_CALLS)
def test_undefined_names_in_calls_and_annotations_match_pyflakes(source):
    """SC111 is pyflakes' undefined names: lint skips what pyflakes does at calls only to read strings as
    annotations (lint reads none), so the names it reports must be pyflakes' own."""

    undefined = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)
    expected = {(m.lineno, m.message_args[0]) for m in checker.Checker(ast.parse(source)).messages
                if isinstance(m, undefined)}  # a set: pyflakes 3.0 reports a name in ``cast(T, x)`` twice
    found = {(f.line, f.message.split("'")[1]) for f in lint_source(source) if f.code == "SC111"}
    assert found == expected


def test_findings_are_sorted_by_position():
    source = (BUGGY / "sc105_split_without_transpose.py").read_text()
    source = source.replace("import math", "import math\nundefined_thing()")
    found = lint_source(source, "f.py")
    assert [(f.line, f.col) for f in found] == sorted((f.line, f.col) for f in found)
    assert found[0].code == "SC111"


def test_lint_never_imports_or_modifies_what_it_reads(tmp_path):
    marker = tmp_path / "imported"
    target = tmp_path / "side_effect.py"
    target.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    before = target.read_bytes()
    files, findings = lint_paths([str(tmp_path)])
    assert files == 1 and findings == []
    assert not marker.exists() and target.read_bytes() == before


def test_directories_are_searched_for_python_files_only(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text((BUGGY / "sc112_reshape_order.py").read_text())
    (tmp_path / "pkg" / "notes.txt").write_text("att.masked_fill(mask, 0)\n")
    (tmp_path / "pkg" / "__pycache__" / "b.py").write_text("x = (\n")
    files, findings = lint_paths([str(tmp_path)])
    assert files == 1 and [f.code for f in findings] == ["SC112"]


def test_missing_path_is_a_usage_error():
    with pytest.raises(UsageError, match="no such file"):
        lint_paths(["/no/such/dir"])


def test_noqa_with_the_flake8_code_of_undefined_names():
    assert lint_source("x = y  # noqa: F821\n") == []
    assert [f.code for f in lint_source("x = y  # noqa: SC101\n")] == ["SC111"]


def _pyproject(tmp_path, body):
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[project]\nname = 'x'\n\n[tool.shapecheck]\n{body}\n")
    return path


def test_pyproject_select_and_ignore(tmp_path):
    path = str(BUGGY / "sc109_mask_polarity.py")
    assert lint_file(path, load_config(_pyproject(tmp_path, 'ignore = ["SC109"]'))) == []
    assert lint_file(path, load_config(_pyproject(tmp_path, 'select = ["SC10"]')))
    assert lint_file(path, load_config(_pyproject(tmp_path, 'select = ["SC11"]'))) == []
    config = load_config(_pyproject(tmp_path, 'fail-on = "error"'))
    assert not config.fails("warning") and config.fails("error")


@pytest.mark.parametrize("body,needle", [
    ('select = ["XX1"]', "matches no code"),
    ('ignore = "SC101"', "list of code prefixes"),
    ('fail-on = "fatal"', "info, warning, error"),
    ("select = [", "cannot read"),
])
def test_bad_pyproject_values_name_the_problem(tmp_path, body, needle):
    with pytest.raises(ConfigError, match=needle):
        load_config(_pyproject(tmp_path, body))


def test_default_config_fails_on_warnings():
    config = LintConfig()
    assert config.fails("warning") and not config.fails("info")


def test_a_gap_in_the_analysis_is_an_info_finding_not_a_traceback(monkeypatch):
    import shapecheck.lint.api as api

    def broken(tree, path):
        raise KeyError("unexpected")

    monkeypatch.setattr(api, "Checker", broken)
    (finding,) = lint_source("x = 1\n", "f.py")
    assert (finding.code, finding.severity) == ("SC003", "info") and "internal error" in finding.message
