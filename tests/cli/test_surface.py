"""One command-line surface: every command parses options the same way, says so in one line, and shares formats."""

from __future__ import annotations

import json

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from shapecheck.cli import COMMANDS, app

# A small, fast, successful run of each command (the options under test are added to it).
RUNS: dict[str, list[str]] = {
    "report": ["report", "--d-model", "16", "--heads", "2", "--layers", "1", "--seq-len", "4"],
    "prove": ["prove", "--preset", "mha", "--samples", "1"],
    "verify": ["verify", "reference_models.attention:MultiHeadAttention", "--max-examples", "2", "--property", "output_shape"],
    "audit": ["audit", "--preset", "mha"],
    "lint": ["lint", "reference_models"],
}
ENV = {"COLUMNS": "80"}
# What each command needs before its options (a bad option value fails before any of it runs).
PREFIX: dict[str, list[str]] = {"report": ["report"], "prove": ["prove"], "verify": ["verify", "x.py:A"],
                                 "audit": ["audit"], "lint": ["lint", "reference_models"]}


def _command(name: str):
    return get_command(app).commands[name]  # type: ignore[attr-defined]


def _minimum(param) -> int:
    """The smallest value the option's own parser accepts (it is one of ``options.positive``'s)."""
    parse = param.type_descriptor.parameter_info.parser
    return next(n for n in range(0, 64) if _accepts(parse, n))


def _accepts(parse, value: int) -> bool:
    try:
        parse(str(value))
    except typer.BadParameter:
        return False
    return True


def _integer_options() -> list[tuple[str, str, int]]:
    """(command, option, smallest accepted value) for every integer option of every command."""
    found = []
    for name in COMMANDS:
        for param in _command(name).params:
            if getattr(param, "metavar", None) == "N":
                found.append((name, max(param.opts, key=len), _minimum(param)))
    return found


def test_every_command_is_covered():
    assert set(RUNS) == set(COMMANDS)
    assert len(_integer_options()) >= 8


@pytest.mark.parametrize("command, option, minimum", _integer_options(), ids=lambda v: str(v))
@pytest.mark.parametrize("value", ["abc", "0", "-1"])
def test_bad_integer_is_one_line_with_one_wording(command, option, minimum, value):
    if value == "0" and minimum == 0:
        pytest.skip(f"{option} accepts 0")
    result = CliRunner().invoke(app, PREFIX[command] + [option, value], env=ENV)
    assert result.exit_code == 2, result.output
    words = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
    shown = f"'{value}'" if value == "abc" else value
    assert result.output.strip() == f"shapecheck: error: {option} must be {words}, got {shown}"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_real_types(command):
    result = CliRunner().invoke(app, [command, "--help"], env=ENV)
    assert result.exit_code == 0
    for placeholder in ("<str>", "<bool>", "<int>", "<list", "<dict"):
        assert placeholder not in result.output, f"{command} --help shows {placeholder}"


@pytest.mark.parametrize("command", COMMANDS)
def test_json_carries_the_verdict_fields(command):
    result = CliRunner().invoke(app, RUNS[command] + ["--format", "json"], env=ENV)
    data = json.loads(result.output)
    assert data["exit_code"] == result.exit_code
    assert data["ok"] is (result.exit_code == 0)


@pytest.mark.parametrize("command", COMMANDS)
def test_table_fits_80_columns(command):
    result = CliRunner().invoke(app, RUNS[command] + ["--format", "table"], env=ENV)
    assert result.exit_code in (0, 1), result.output
    wide = [line for line in result.output.splitlines() if len(line) > 80]
    assert not wide, f"{command}: {len(wide)} lines wider than 80, e.g. {wide[0]!r}"


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_format_names_the_choices(command):
    result = CliRunner().invoke(app, PREFIX[command] + ["--format", "xml"], env=ENV)
    assert result.exit_code == 2
    assert result.output.startswith("shapecheck: error: --format 'xml' is not one of: table, json")
    assert len(result.output.strip().splitlines()) == 1
