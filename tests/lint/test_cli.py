"""``shapecheck lint`` from the command line: formats, exit codes, usage errors, the pre-commit hook."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.lint.messages import CODES, OPT_IN

from .helpers import CORPUS, ROOT, expected_marks

runner = CliRunner()
BUGGY, CLEAN = CORPUS / "buggy", CORPUS / "clean"


def lint(*args):
    return runner.invoke(app, ["lint", *map(str, args)])


def test_clean_directory_exits_0_with_no_output():
    result = lint(CLEAN)
    assert result.exit_code == 0 and result.stdout == ""


def test_findings_print_flake8_lines_and_exit_1():
    path = BUGGY / "sc112_reshape_order.py"
    result = lint(path)
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"{path}:24:") and " SC112 reshape(seq_q, batch, d_model) on a [batch, seq_q" in line


def test_fail_on_decides_which_severity_fails():
    warning_only = BUGGY / "sc102_unscaled_scores.py"
    assert lint("--extend-select", "SC102", warning_only).exit_code == 1
    assert lint("--extend-select", "SC102", "--fail-on", "error", warning_only).exit_code == 0
    assert lint("--extend-select", "SC102", "--ignore", "SC102", warning_only).exit_code == 0


def test_an_opt_in_rule_is_reported_only_where_its_exact_code_is_selected(tmp_path):
    warning_only = BUGGY / "sc102_unscaled_scores.py"
    assert lint(warning_only).exit_code == 0 and lint(warning_only).stdout == ""
    assert lint("--select", "SC1", warning_only).stdout == ""  # a prefix does not name it
    assert "SC102" in lint("--select", "SC102", warning_only).stdout
    assert "SC102" in lint("--extend-select", "SC102", warning_only).stdout
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nextend-select = ["SC102"]\n')
    copy = tmp_path / "m.py"
    copy.write_text(warning_only.read_text())
    assert lint(copy).exit_code == 1
    assert "(opt-in: --extend-select SC102)" in lint("--list-rules").stdout


def test_a_file_that_does_not_parse_is_reported_and_exits_2(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def forward(self, x:\n")
    result = lint(broken, BUGGY / "sc112_reshape_order.py")
    assert result.exit_code == 2
    assert f"{broken}:1:" in result.stdout and " SC001 cannot analyse: syntax error" in result.stdout
    assert " SC112 " in result.stdout  # the other files are still linted and reported


def test_json_format():
    result = lint("--format", "json", BUGGY / "sc113_key_query_length.py", CLEAN)
    data = json.loads(result.stdout)
    assert data["files"] == 1 + len(list(CLEAN.glob("*.py")))
    assert [f["line"] for f in data["findings"]] == [22, 23]
    assert set(data["findings"][0]) == {"path", "line", "col", "code", "severity", "message", "hint"}


def test_sarif_format_follows_the_2_1_0_layout():
    result = lint("--format", "sarif", "--extend-select", ",".join(sorted(OPT_IN)), BUGGY)  # every buggy file's rule
    log = json.loads(result.stdout)
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    for res in run["results"]:
        assert res["level"] in ("error", "warning", "note")
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert len(run["results"]) == sum(len(expected_marks(p)) for p in BUGGY.glob("*.py"))


@pytest.mark.parametrize("args,needle", [
    (["/no/such/file.py"], "no such file"),
    ([], "at least one PATH"),
    (["--format", "xml", "x.py"], "is not one of: table, json, sarif"),
    (["--jobs", "0", "x.py"], "--jobs must be a positive integer, got 0"),
    (["notes.txt"], "not a Python file"),
    (["--fail-on", "fatal", "x.py"], "is not one of: error, warning, info"),
    (["--select", "ZZ9", "x.py"], "valid codes"),
])
def test_usage_errors_are_one_line_and_exit_2(args, needle, tmp_path):
    (tmp_path / "x.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("x = 1\n")
    result = runner.invoke(app, ["lint", *[str(tmp_path / a) if a in ("x.py", "notes.txt") else a for a in args]])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and needle in result.stderr
    assert "Traceback" not in result.output


def test_list_rules_names_every_code_with_readable_placeholders():
    result = lint("--list-rules")
    assert result.exit_code == 0 and all(code in result.stdout for code in CODES)
    assert "{" not in result.stdout and "}" not in result.stdout
    assert "softmax over <dim> of attention scores <scores axes>" in result.stdout
    assert "hint: use the mask by its convention: <fix>" in result.stdout  # SC109's hint was a bare placeholder


def test_select_and_ignore_are_repeatable_and_comma_separated():
    both = (BUGGY / "sc112_reshape_order.py", BUGGY / "sc101_softmax_axis.py")
    found = {line.split()[1] for line in lint("--select", "SC112", "--select", "SC101", *both).stdout.splitlines()}
    assert found == {"SC112", "SC101"}
    assert {line.split()[1] for line in lint("--select", "SC112,SC101", *both).stdout.splitlines()} == found
    assert lint("--ignore", "SC112", "--ignore", "SC101", *both).exit_code == 0


def test_text_is_an_alias_of_table():
    path = BUGGY / "sc112_reshape_order.py"
    assert lint("--format", "text", path).stdout == lint("--format", "table", path).stdout == lint(path).stdout


def test_json_carries_the_verdict_fields():
    failing = json.loads(lint("--format", "json", BUGGY / "sc112_reshape_order.py").stdout)
    passing = json.loads(lint("--format", "json", CLEAN).stdout)
    assert (failing["ok"], failing["exit_code"]) == (False, 1)
    assert (passing["ok"], passing["exit_code"]) == (True, 0)


def test_jobs_give_the_same_output_in_the_same_order():
    serial = lint("--jobs", "1", BUGGY, CLEAN)
    parallel = lint("--jobs", "2", BUGGY, CLEAN)
    assert serial.exit_code == parallel.exit_code == 1
    assert serial.stdout == parallel.stdout and serial.stdout.count("\n") >= 18


def test_unknown_pyproject_key_is_one_line_naming_the_valid_keys(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nselekt = ["SC1"]\n')
    (tmp_path / "x.py").write_text("x = 1\n")
    result = lint(tmp_path / "x.py")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "unknown key 'selekt'" in result.stderr and "valid keys: select, extend-select, ignore, fail-on" in result.stderr


def test_directories_are_still_walked_and_scripts_named_explicitly_are_read(tmp_path):
    (tmp_path / "notes.txt").write_text("not python at all (\n")
    (tmp_path / "tool").write_text("#!/usr/bin/env python3\nx = 1\n")
    assert lint(tmp_path).exit_code == 0  # the .txt inside a directory is not read
    assert lint(tmp_path / "tool").exit_code == 0


def test_pre_commit_hook_runs_the_lint_command():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "shapecheck-lint" and hook["types"] == ["python"]
    program, command = hook["entry"].split()
    assert program == "shapecheck" and command == "lint"
    assert runner.invoke(app, [command, "--help"]).exit_code == 0


def test_pre_commit_hook_installs_nothing():
    """A hook of language python would install the package and its dependencies (torch) into its own env."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["language"] == "system" and not hook.get("additional_dependencies")


def _stdin(text, *args):
    return runner.invoke(app, ["lint", "-", "--extend-select", "SC102", *args], input=text)


UNSCALED = "import torch\ndef f(q, k):\n    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n"


def test_stdin_with_a_filename_and_per_file_ignores():
    result = _stdin(UNSCALED, "--stdin-filename", "models/a.py")
    assert result.exit_code == 1 and result.stdout.startswith("models/a.py:3:")
    assert _stdin(UNSCALED, "--stdin-filename", "models/a.py", "--per-file-ignores", "models/*:SC102").exit_code == 0
    assert _stdin(UNSCALED, "--stdin-filename", "other/a.py", "--per-file-ignores", "models/*:SC102").exit_code == 1
    bad = _stdin(UNSCALED, "--per-file-ignores", "models/*")
    assert bad.exit_code == 2 and "PATTERN:CODE" in bad.output


def test_exit_zero_and_statistics():
    path = BUGGY / "sc105_split_without_transpose.py"
    result = lint(path, "--exit-zero", "--statistics")
    assert result.exit_code == 0
    (line,) = result.stdout.splitlines()
    count, code, name = line.split("\t")
    assert code == "SC105" and name == "split-without-transpose" and int(count) == len(expected_marks(path)) == 3


def test_exclude_and_extend_exclude(tmp_path):
    for folder in ("build", "gen", ".hidden", "src"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(UNSCALED)
    found = lambda *args: {line.split(":")[0].split("/")[-2]  # noqa: E731
                           for line in lint(tmp_path, "--extend-select", "SC102", *args).stdout.splitlines()}
    assert found() == {"build", "gen", "src"}  # hidden directories are excluded by default
    assert found("--extend-exclude", "build,gen") == {"src"}
    assert found("--exclude", "build") == {"gen", "src", ".hidden"}  # --exclude replaces the defaults
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nextend-exclude = ["gen"]\n'
                                             'per-file-ignores = {"src/*" = ["SC102"]}\n')
    assert found() == {"build"}


def test_undefined_names_in_all_are_not_errors(tmp_path):
    path = tmp_path / "lazy.py"
    path.write_text('__all__ = ["Model"]\n')
    result = lint(path)
    assert result.exit_code == 0 and "SC111" in result.stdout
    assert lint(path, "--fail-on", "info").exit_code == 1


def test_a_project_declares_a_mask_convention(tmp_path):
    path = tmp_path / "attn.py"
    path.write_text("import math, torch\n\n\ndef attend(q, k, v, mask):\n"
                    "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\n"
                    "    scores = scores.masked_fill(mask, float('-inf'))\n"
                    "    return scores.softmax(dim=-1) @ v\n")
    assert lint(path).exit_code == 0  # 'mask' alone does not say which way round it is
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nmask-conventions = {mask = "keep"}\n')
    result = lint(path)
    assert result.exit_code == 1 and "SC109" in result.stdout and "declared in [tool.shapecheck]" in result.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nmask-conventions = {mask = "masked"}\n')
    assert lint(path).exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.shapecheck]\nmask-conventions = {mask = "upside-down"}\n')
    bad = lint(path)
    assert bad.exit_code == 2 and "keep, masked" in bad.output
