"""Validation helpers for the frozen dataclass configs of every model family.

A config calls these from ``__post_init__``; each raises ``ConfigError``
naming the values, so the user reads ``d_model=510 is not divisible by heads=8``.
"""

from __future__ import annotations

from typing import Any

from shapecheck.errors import ConfigError


def _value(config: Any, name: str) -> Any:
    return getattr(config, name)


def _label(config: Any) -> str:
    return type(config).__name__


def require_positive(config: Any, *names: str) -> None:
    """Every named field is an integer greater than zero."""
    for name in names:
        value = _value(config, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{_label(config)}: {name}={value!r} must be an integer")
        if value <= 0:
            raise ConfigError(f"{_label(config)}: {name}={value} must be positive")


def require_divisible(config: Any, numerator: str, denominator: str) -> None:
    """``numerator`` is a whole multiple of ``denominator``."""
    num, den = _value(config, numerator), _value(config, denominator)
    if num % den != 0:
        raise ConfigError(
            f"{_label(config)}: {numerator}={num} is not divisible by {denominator}={den}"
        )


def require_probability(config: Any, *names: str) -> None:
    """Every named field is a dropout probability in [0, 1)."""
    for name in names:
        value = _value(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{_label(config)}: {name}={value!r} must be a number in [0, 1)")
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"{_label(config)}: {name}={value} must be in [0, 1)")


def require_positive_number(config: Any, *names: str) -> None:
    """Every named field is a real number greater than zero (an epsilon, a scale)."""
    for name in names:
        value = _value(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{_label(config)}: {name}={value!r} must be a positive number")


def require_bool(config: Any, *names: str) -> None:
    """Every named field is True or False (not 0/1, not a string)."""
    for name in names:
        value = _value(config, name)
        if not isinstance(value, bool):
            raise ConfigError(f"{_label(config)}: {name}={value!r} must be True or False")


def require_equal(config: Any, first: str, second: str, why: str) -> None:
    """Two fields agree; ``why`` says what needs them equal."""
    a, b = _value(config, first), _value(config, second)
    if a != b:
        raise ConfigError(f"{_label(config)}: {first}={a} must equal {second}={b}: {why}")


def require_choice(config: Any, name: str, choices: tuple[str, ...]) -> None:
    """The named field is one of ``choices``."""
    value = _value(config, name)
    if value not in choices:
        raise ConfigError(
            f"{_label(config)}: {name}={value!r} is not one of {', '.join(map(repr, choices))}"
        )


def default_head_sizes(config: Any) -> None:
    """Fill ``d_k`` / ``d_v`` left as None with d_model // heads (which must then divide), and check them."""
    if config.d_k is None or config.d_v is None:
        require_divisible(config, "d_model", "heads")
    for name in ("d_k", "d_v"):
        if getattr(config, name) is None:
            object.__setattr__(config, name, config.d_model // config.heads)  # frozen: set once, here
    require_positive(config, "d_k", "d_v")
