"""Every numeric option has a documented maximum (``options.LIMITS``): the bound is accepted, one more is
refused in one line naming it, and ``nan``/``inf`` are never taken as numbers or names."""

from __future__ import annotations

import inspect
import typing

import pytest
from typer.models import OptionInfo
from typer.testing import CliRunner

from shapecheck.cli import app, options

# What each command needs before its options (a bad option value fails before any of it runs).
PREFIX = {"report": ["report"], "prove": ["prove"], "verify": ["verify", "x.py:A"], "audit": ["audit"],
          "lint": ["lint", "reference_models"]}


def _numeric_options() -> list[tuple[str, str, type]]:
    """(command, option, int or float) for every numeric option, read from the commands' signatures."""
    found = []
    for info in app.registered_commands:
        hints = typing.get_type_hints(info.callback)
        for name, param in inspect.signature(info.callback).parameters.items():
            hint = hints[name]
            kinds = typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)
            kind = next((k for k in (int, float) if k in kinds), None)
            if isinstance(param.default, OptionInfo) and kind is not None:
                found.append((info.name, max(param.default.param_decls, key=len), kind))
    return found


def _error(command: str, option: str, value: str) -> str:
    """The error line for ``option value`` (a bad ``--format`` after it shows that the value itself was taken)."""
    result = CliRunner().invoke(app, PREFIX[command] + [option, value, "--format", "xml"])
    assert result.exit_code == 2 and result.stdout == ""
    return result.stderr.strip()


def test_every_numeric_option_is_found():
    found = {option for _, option, _ in _numeric_options()}
    assert {"--layers", "--d-model", "--max-seq-len", "--samples", "--max-examples", "--timeout", "--jobs"} <= found


@pytest.mark.parametrize("command, option, kind", [o for o in _numeric_options() if o[2] is int], ids=str)
def test_every_integer_option_has_a_bound_it_keeps(command, option, kind):
    assert option in options.LIMITS, f"{command} {option} has no maximum in options.LIMITS"
    bound = options.LIMITS[option]
    assert _error(command, option, str(bound)).startswith("shapecheck: error: --format 'xml'")  # the bound is taken
    line = _error(command, option, str(10**18))
    assert line.startswith(f"shapecheck: error: {option} must be ") and line.endswith(f"{bound:,}, got {10**18}")


@pytest.mark.parametrize("command, option, kind", [o for o in _numeric_options() if o[2] is float], ids=str)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "1e400"])
def test_real_options_refuse_nan_inf_and_zero(command, option, kind, value):
    assert _error(command, option, value).startswith(f"shapecheck: error: {option} must be a positive number")


@pytest.mark.parametrize("value", ["nan", "inf", "Infinity", "1e3", "2.5", str(options.LIMITS["--seq-len"] + 1)])
def test_seq_len_refuses_numbers_that_are_not_lengths(value):
    assert _error("report", "--seq-len", value).startswith("shapecheck: error: --seq-len must be a positive integer up to")


def test_prove_max_size_is_bounded_per_axis():
    line = _error("prove", "--max-size", f"seq={10**18}")
    assert line.endswith(f"the value must be a positive integer up to {options.LIMITS['--max-size']:,}, got {10**18}")
