"""Typed command-line options: one home for every flag's parsing, its help type and its error wording.

Each function returns a ``typer.Option`` whose parser converts the text and fails
with a ``typer.BadParameter``; the app's group (``shapecheck.cli``) prints every
such failure as one line, ``shapecheck: error: --heads must be a positive integer,
got 'abc'``, and exits 2. Flags show no value type in ``--help``; valued options
show their real one (``N``, ``table|json|...``, ``NAME=VALUE,...``).

Use them as parameter defaults::

    def report(heads: Optional[int] = options.heads(), fmt: str = options.output_format(FORMATS)): ...

The same flag has the same name and meaning in every command: the shared ones
(``--d-model``, ``--heads``, ``--init``, ``--preset``, ``--format``, ``--seed`` ...)
are defined once below. ``split_selection`` flattens repeatable, comma-separated
selections (``--select SC104 --select SC101,SC102``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import typer

from shapecheck.errors import UsageError

FORMATS: tuple[str, ...] = ("table", "json", "markdown", "csv")

# ---------------------------------------------------------------- bounds (the one place they live)

SIZE_LIMITS: dict[str, int] = {
    "d_model": 2**20, "heads": 2**14, "kv_heads": 2**14, "d_head": 2**16, "rotary_dim": 2**16, "d_ff": 2**22,
    "layers": 1024, "vocab": 2**24, "max_seq": 2**24, "window": 2**24, "seq": 2**24, "batch": 2**16,
}
"""The largest value of each size, by role (``shapecheck.vocabulary``): far above every released model
(d_model 16,384 to 25,600, 128 heads, 126 layers, vocabularies of 256k), small enough that counting on the
meta device finishes in seconds. config.json fields are held to the bound of their role (``cli.config_file``)."""

LIMITS: dict[str, float] = {
    "--d-model": SIZE_LIMITS["d_model"], "--heads": SIZE_LIMITS["heads"], "--layers": SIZE_LIMITS["layers"],
    "--d-ff": SIZE_LIMITS["d_ff"], "--d-k": SIZE_LIMITS["d_head"], "--d-v": SIZE_LIMITS["d_head"],
    "--vocab": SIZE_LIMITS["vocab"], "--max-seq": SIZE_LIMITS["max_seq"], "--seq-len": SIZE_LIMITS["seq"],
    "--context": SIZE_LIMITS["seq"], "--batch": SIZE_LIMITS["batch"],
    "--depth": 1000,  # module-tree depth shown
    "--tokens-per-second": 10**12, "--peak-tflops": 10**7,
    "--seed": 2**32 - 1,
    "--samples": 100,  # prove: each sample runs the exported program on real tensors
    "--max-size": 4096,  # prove: the largest sampled batch/sequence size (real tensors, S² scores)
    "--size": 2**16,  # prove: static axes such as d_in
    "--max-examples": 10_000, "--max-seq-len": 512, "--d-head-multiple": 1024,  # verify: real tensors per example
    "--probe-d-model": 4096, "--probe-heads": 256,  # audit's liveness probe runs on the CPU
    "--timeout": 10**6,
    "--jobs": 256,  # lint: worker processes
}
"""Every numeric option's largest value (``tests/cli/test_limits.py`` checks each command's options have one);
a larger value is refused in one line: ``--layers must be a positive integer up to 1,024, got 1000000``."""
FORMAT_ALIASES: dict[str, str] = {"text": "table"}


# ---------------------------------------------------------------- parsers (each fails with one wording)


def parse_int(text: Any, *, minimum: int = 1, maximum: Optional[float] = None) -> int:
    """``'8'`` -> 8; anything that is not an integer from ``minimum`` to ``maximum`` raises ``BadParameter``."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise typer.BadParameter(f"must be {_int_words(minimum)}, got {_shown(text)}") from None
    if value < minimum:
        raise typer.BadParameter(f"must be {_int_words(minimum)}, got {_shown(value)}")
    if maximum is not None and value > maximum:
        raise typer.BadParameter(f"must be {_int_words(minimum, maximum)}, got {_shown(value)}")
    return value


def _int_words(minimum: int, maximum: Optional[float] = None) -> str:
    if maximum is not None and minimum not in (0, 1):
        return f"an integer from {minimum} to {maximum:,}"
    words = {1: "a positive integer", 0: "a non-negative integer"}.get(minimum, f"an integer >= {minimum}")
    return words + (f" up to {maximum:,}" if maximum is not None else "")


def _shown(value: Any) -> str:
    """The value as the error line shows it (a 5,000-digit number is cut short)."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_choice(text: Any, choices: Sequence[str], aliases: Optional[dict[str, str]] = None) -> str:
    """``text`` if it is one of ``choices`` (or an alias of one), else ``BadParameter`` naming them."""
    value = (aliases or {}).get(str(text), str(text))
    if value not in choices:
        raise typer.BadParameter(f"{str(text)!r} is not one of: {', '.join(choices)}")
    return value


def parse_pairs(text: Any, value: Callable[[str], Any]) -> dict[str, Any]:
    """``'a=1,b=x'`` -> ``{'a': value('1'), 'b': value('x')}``; a malformed item raises ``BadParameter``."""
    result: dict[str, Any] = {}
    for item in _top_level(str(text)):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise typer.BadParameter(f"item {item.strip()!r} is not name=value")
        try:
            result[name.strip()] = value(raw.strip())
        except typer.BadParameter as error:
            raise typer.BadParameter(f"item {item.strip()!r}: the value {error.message}") from None
    return result


def parse_selection(text: Any, choices: Optional[Sequence[str]] = None) -> str:
    """One occurrence of a repeatable selection: comma-separated items, each checked against ``choices``."""
    for item in split_selection([str(text)]):
        if choices is not None:
            parse_choice(item, choices)
    return str(text)


def split_selection(values: Optional[Iterable[str]]) -> tuple[str, ...]:
    """``['SC104', 'SC101,SC102']`` -> ``('SC104', 'SC101', 'SC102')`` (order kept, empty items dropped)."""
    return tuple(item.strip() for value in values or () for item in value.split(",") if item.strip())


def _top_level(text: str) -> list[str]:
    """``'a=[1,2],b=3'`` -> ``['a=[1,2]', 'b=3']``: split at commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "[(") - (char in "])")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return items + [text[start:]]


def parse_value(text: str) -> Any:
    """``'8'`` -> 8, ``'0.1'`` -> 0.1, ``'true'`` -> True, ``'none'`` -> None, ``'[2,2]'`` -> [2, 2], anything else the string."""
    lowered = text.strip().lower()
    if lowered.startswith("[") and lowered.endswith("]"):
        return [parse_value(item) for item in _top_level(text.strip()[1:-1]) if item.strip()]
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    return text.strip().strip("'\"")


def usage(option: str, message: str) -> UsageError:
    """A ``UsageError`` worded as the parsers word theirs: ``--heads must be ...``."""
    return UsageError(f"{option} {message}")


# ---------------------------------------------------------------- option builders


def flag(*names: str, help: str, default: bool = False) -> Any:
    """A boolean flag (``--strict``): no value, no type shown in ``--help``."""
    return typer.Option(default, *names, help=help, metavar="", show_default=False)


def positive(*names: str, help: str, default: Optional[int] = None, minimum: int = 1) -> Any:
    """An integer option from ``minimum`` (default 1) to its bound in ``LIMITS``, shown as ``N``."""
    maximum = _limit(names)
    return typer.Option(default, *names, help=help, metavar="N", show_default=default is not None,
                        parser=lambda text: parse_int(text, minimum=minimum, maximum=maximum))


def _limit(names: Sequence[str]) -> Optional[float]:
    return next((LIMITS[name] for name in names if name in LIMITS), None)


def choice(*names: str, choices: Sequence[str], help: str, default: Optional[str] = None,
           aliases: Optional[dict[str, str]] = None) -> Any:
    """One of ``choices``, shown as ``a|b|c``; ``aliases`` map other accepted spellings onto a choice."""
    return typer.Option(default, *names, help=help, metavar="|".join(choices),
                        parser=lambda text: parse_choice(text, choices, aliases), show_default=default is not None)


def parse_number(text: Any, maximum: Optional[float] = None) -> float:
    """``'0.5'`` -> 0.5; anything that is not a finite positive number (up to ``maximum``) raises ``BadParameter``."""
    try:
        value = float(str(text).strip())
    except (ValueError, OverflowError):
        raise typer.BadParameter(f"must be a positive number, got {_shown(str(text))}") from None
    if not value > 0 or value == float("inf"):
        raise typer.BadParameter(f"must be a positive number, got {value:g}")
    if maximum is not None and value > maximum:
        raise typer.BadParameter(f"must be a positive number up to {maximum:,}, got {value:g}")
    return value


def number(*names: str, help: str, default: Optional[float] = None) -> Any:
    """A finite positive real number (up to its bound in ``LIMITS``, if any), shown as ``X``."""
    maximum = _limit(names)
    return typer.Option(default, *names, help=help, metavar="X", parser=lambda text: parse_number(text, maximum),
                        show_default=default is not None)


def parse_length(text: Any) -> str:
    """``--seq-len``: a positive integer up to its bound, or a name such as S; spellings of numbers that are
    not integers (``nan``, ``inf``, ``1e3``, ``2.5``) are refused rather than taken as names."""
    value = str(text).strip()
    if value.lstrip("+-").isdigit():
        return str(parse_int(value, maximum=LIMITS["--seq-len"]))
    try:
        float(value)
    except ValueError:
        return value  # a name: shapecheck.report checks its spelling
    raise typer.BadParameter(f"must be {_int_words(1, LIMITS['--seq-len'])} or a name such as S, got {_shown(value)}")


def length(*names: str, help: str) -> Any:
    """A sequence length or the name of one (``N|NAME``)."""
    return typer.Option(None, *names, help=help, metavar="N|NAME", parser=parse_length)


def pairs(*names: str, help: str, value: Callable[[str], Any] = parse_value, metavar: str = "NAME=VALUE,...") -> Any:
    """``name=value,...`` parsed into a dict (values by ``value``: ints, floats, booleans, none, strings)."""
    return typer.Option(None, *names, help=help, metavar=metavar, parser=lambda text: parse_pairs(text, value))


def sizes(*names: str, help: str) -> Any:
    """``axis=N,...`` with N positive integers up to the option's bound in ``LIMITS``."""
    maximum = _limit(names)
    return pairs(*names, help=help, value=lambda text: parse_int(text, maximum=maximum), metavar="AXIS=N,...")


def selection(*names: str, help: str, choices: Optional[Sequence[str]] = None, metavar: str = "NAME") -> Any:
    """A repeatable, comma-separated selection; flatten the list the command receives with ``split_selection``."""
    return typer.Option(None, *names, help=help, metavar=f"{metavar}[,{metavar}...]",
                        parser=lambda text: parse_selection(text, choices))


def text(*names: str, help: str, default: Optional[str] = None, metavar: str = "TEXT") -> Any:
    """A free-text option."""
    return typer.Option(default, *names, help=help, metavar=metavar, show_default=default is not None)


# ---------------------------------------------------------------- the flags every command spells the same way


def output_format(choices: Sequence[str] = FORMATS, default: str = "table") -> Any:
    described = {"table": "table (for people; 'text' is the same)", "json": "json (with 'ok' and 'exit_code')"}
    return choice("--format", choices=choices, default=default, aliases=FORMAT_ALIASES,
                  help="Output: " + ", ".join(described.get(name, name) for name in choices) + ".")


def d_model(help: str = "Model width d_model (default: the constructor's or preset's own).") -> Any:
    return positive("--d-model", help=help)


def heads(help: str = "Attention heads h (default: the constructor's or preset's own).") -> Any:
    return positive("--heads", help=help)


def init() -> Any:
    return pairs("--init", help="Constructor arguments by name, 'name=value,...' (ints, floats, true/false, none, [lists], dtype names, text).")


def preset(names: Sequence[str]) -> Any:
    return text("--preset", metavar="NAME", help=f"A released model's sizes: {', '.join(names)}.")


def timeout() -> Any:
    return number("--timeout", help="Seconds each import, constructor call and forward call of the module may take; "
                                    "one that runs longer stops the run (exit 2). Default: no limit.")


def seed() -> Any:
    return positive("--seed", default=0, minimum=0, help="Random seed; the same seed gives the same run.")


# ---------------------------------------------------------------- positional arguments


def target(required: bool = True) -> Any:
    """The module to work on: ``path/to/file.py:Name`` or ``package.module:Name`` (a class or a factory)."""
    return typer.Argument(... if required else None, metavar="TARGET" if required else "[TARGET]", show_default=False,
                          help="path/to/file.py:Name or package.module:Name (an nn.Module class or a factory function).")


def paths(help: str) -> Any:
    """Files or directories to read."""
    return typer.Argument(None, metavar="PATH...", help=help, show_default=False)
