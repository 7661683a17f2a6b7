"""The options module: typed parsing, one wording for every bad value, flags shown as flags."""

from __future__ import annotations

import types
from typing import Optional

import pytest
import typer
from typer.testing import CliRunner

from shapecheck.cli import build_app, options


def _demo_app(monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    def register(app: typer.Typer) -> None:
        @app.command("demo")
        def demo(
            heads: Optional[int] = options.heads(),
            fmt: str = options.output_format(),
            strict: bool = options.flag("--strict", help="Be strict."),
            init: Optional[dict] = options.init(),
            select: Optional[list[str]] = options.selection("--select", help="Codes.", choices=("A", "B")),
        ) -> None:
            """A command made of shared options."""
            typer.echo(repr((heads, fmt, strict, init, options.split_selection(select))))

    monkeypatch.setitem(__import__("sys").modules, "shapecheck.cli.demo", types.SimpleNamespace(register=register))
    return build_app(("demo",))


@pytest.mark.parametrize("value, shown", [("abc", "'abc'"), ("0", "0"), ("-1", "-1"), ("2.5", "'2.5'")])
def test_bad_integer_is_one_line_exit_2(monkeypatch, value, shown):
    result = CliRunner().invoke(_demo_app(monkeypatch), ["demo", "--heads", value])
    assert result.exit_code == 2
    assert result.output.strip() == f"shapecheck: error: --heads must be a positive integer, got {shown}"


@pytest.mark.parametrize("args, message", [
    (["demo", "--format", "xml"], "--format 'xml' is not one of: table, json, markdown, csv"),
    (["demo", "--init", "zz"], "--init item 'zz' is not name=value"),
    (["demo", "--select", "A,C"], "--select 'C' is not one of: A, B"),
])
def test_bad_choice_and_pairs_are_one_line_exit_2(monkeypatch, args, message):
    result = CliRunner().invoke(_demo_app(monkeypatch), args)
    assert (result.exit_code, result.output.strip()) == (2, f"shapecheck: error: {message}")


def test_unknown_option_is_one_line_exit_2(monkeypatch):
    result = CliRunner().invoke(_demo_app(monkeypatch), ["demo", "--nope"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("shapecheck: error: no such option: --nope")


def test_values_parse_and_selections_repeat(monkeypatch):
    result = CliRunner().invoke(
        _demo_app(monkeypatch),
        ["demo", "--heads", "3", "--format", "text", "--strict", "--init", "a=1,b=x,c=true", "--select", "B", "--select", "A,B"],
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == repr((3, "table", True, {"a": 1, "b": "x", "c": True}, ("B", "A", "B")))


def test_help_shows_real_types_and_flags_without_a_value(monkeypatch):
    result = CliRunner().invoke(_demo_app(monkeypatch), ["demo", "-h"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "<bool>" not in result.output and "<str>" not in result.output and "<int>" not in result.output
    assert "--heads" in result.output and " N " in result.output
    assert "table|json|markdown|csv" in result.output


def test_version(monkeypatch):
    from shapecheck import __version__

    result = CliRunner().invoke(_demo_app(monkeypatch), ["--version"])
    assert (result.exit_code, result.output.strip()) == (0, f"shapecheck {__version__}")


@pytest.mark.parametrize("text, expected", [("8", 8), (8, 8)])
def test_parse_int_accepts_integers(text, expected):
    assert options.parse_int(text) == expected


def test_parse_int_lower_bound_words():
    with pytest.raises(typer.BadParameter, match="must be a non-negative integer, got -1"):
        options.parse_int("-1", minimum=0)
    with pytest.raises(typer.BadParameter, match="must be an integer >= 2, got 1"):
        options.parse_int("1", minimum=2)


def test_split_selection_flattens_commas_and_repeats():
    assert options.split_selection(["SC104", "SC101, SC102", ""]) == ("SC104", "SC101", "SC102")
    assert options.split_selection(None) == ()


def test_init_pairs_take_ints_floats_booleans_none_and_text():
    parsed = options.parse_pairs("a=1, b=0.5,c=true,d=False,e=none,f=gelu", options.parse_value)
    assert parsed == {"a": 1, "b": 0.5, "c": True, "d": False, "e": None, "f": "gelu"}
    with pytest.raises(typer.BadParameter, match="not name=value"):
        options.parse_pairs("heads", options.parse_value)
