"""A catalogue model for ``shapecheck report --model/--preset``: the flags resolved into sizes, validated.

``resolve_config(...)`` applies the family's defaults, then a preset, then explicit values; it
checks every value (raising ``UsageError`` / ``ConfigError`` that name the valid choices) and
returns a ``ReportConfig``. ``build(config)`` builds the reference module on the meta device and
says how to feed it. The report itself is the same as for any model
(``shapecheck.counting.tree.model_report``): rows from the module tree, no per-model row list.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from torch import nn

from shapecheck.catalog import FAMILIES, FAMILY_DEFAULTS, KINDS, PRESETS, Kind, Sizes, family, make_sizes
from shapecheck.counting.feed import Feed, kind_feed
from shapecheck.errors import ConfigError, UsageError

SYMBOLIC_POINTS = (1, 2, 3, 4)  # a named length is measured here (shapecheck.counting.symbolic)
MAX_ELEMENTS = 2**60  # torch sizes a tensor's storage in bytes as a signed 64-bit integer
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLAG_USE = {"layers": "layers", "d_ff": "d_ff", "vocab": "vocab", "max_seq": "max_seq", "d_k": "d_k", "d_v": "d_k",
             "impl": "impl"}
IMPLS = ("sdpa", "math")


@dataclass(frozen=True)
class ReportConfig:
    """A catalogue model at given sizes; ``seq_len`` is an int or a name such as "S"."""

    model: str
    sizes: Sizes
    seq_len: Union[int, str] = 128
    batch: int = 1
    preset: Optional[str] = None

    @property
    def symbolic(self) -> bool:
        return isinstance(self.seq_len, str)

    @property
    def kind(self) -> Kind:
        return KINDS[self.model]

    def described(self) -> dict[str, Any]:
        """The sizes this kind reads: d_model, heads, then those of d_k, d_v, d_ff, layers, vocab, max_seq, impl."""
        s = self.sizes
        shown = {"d_model": s.d_model, "heads": s.heads, "d_k": s.d_k, "d_v": s.d_v, "d_ff": s.d_ff,
                 "layers": s.layers, "vocab": s.vocab, "max_seq": s.max_seq, "impl": s.impl}
        uses = self.kind.uses | {"d_model", "heads"} | ({"d_v"} if "d_k" in self.kind.uses else set())
        return {k: v for k, v in shown.items() if k in uses}

    def label(self) -> str:
        """``preset bert-base (Devlin et al. 2019, BERT-base): d_model=768 ...`` or ``model encoder: ...``."""
        head = f"preset {self.preset} ({PRESETS[self.preset].source})" if self.preset else f"model {self.model}"
        return head + ": " + " ".join(f"{k}={v}" for k, v in self.described().items())


def build(config: ReportConfig) -> tuple[nn.Module, str, Feed]:
    """The module on the meta device, its label, and how to call it."""
    from shapecheck.counting.params import on_meta

    kind = config.kind
    return on_meta(lambda: kind.build(config.sizes)), config.label(), kind_feed(kind, config.sizes)


# --- validation --------------------------------------------------------------------------------


def _require_size(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ConfigError(f"--{name.replace('_', '-')} must be a positive integer, got {value}")


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in order, in O(√n) steps (d_model may be large)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


def _check_fits(values: dict[str, int], batch: int, seq: int) -> None:
    """Every tensor the model builds must be one torch can describe: at most ``MAX_ELEMENTS`` elements."""
    d_model, h = values["d_model"], values["heads"]
    widths = max(d_model, values["d_ff"], h * values["d_k"], h * values["d_v"], values["vocab"])
    tensors = {
        "(batch, seq, width) activations": batch * seq * widths,
        "(batch, heads, seq, seq) scores": batch * h * seq * seq,
        "(d_model, width) weights": d_model * max(widths, 3 * d_model, values["max_seq"]),
    }
    for what, elements in tensors.items():
        if elements > MAX_ELEMENTS:
            raise ConfigError(
                f"sizes too large: the {what} would have {elements:.3g} elements, more than torch can index "
                f"(2^60); give smaller sizes"
            )


def _check_choices(model: Optional[str], preset: Optional[str], impl: Optional[str]) -> None:
    if model is not None and model not in KINDS:
        raise UsageError(f"unknown model {model!r}; choose one of: {', '.join(KINDS)}")
    if preset is not None and preset not in PRESETS:
        raise UsageError(f"unknown preset {preset!r}; choose one of: {', '.join(PRESETS)}")
    if impl is not None and impl not in IMPLS:
        raise UsageError(f"unknown attention path --impl {impl!r}; choose one of: {', '.join(IMPLS)}")
    if model is not None and preset is not None and family(model) != family(PRESETS[preset].kind):
        fits = FAMILIES[family(PRESETS[preset].kind)]
        raise UsageError(f"--preset {preset} contradicts --model {model}; with this preset use --model {' or '.join(fits)}")


def _check_applies(kind: Kind, flags: dict[str, Any]) -> None:
    for name, value in flags.items():
        if value is not None and name in _FLAG_USE and _FLAG_USE[name] not in kind.uses:
            fits = [m for m, k in KINDS.items() if _FLAG_USE[name] in k.uses]
            raise UsageError(
                f"--{name.replace('_', '-')} does not apply to --model {kind.name}; it applies to: {', '.join(fits)}"
            )


def _check_heads(d_model: int, heads: int, d_k: Optional[int], d_v: Optional[int]) -> None:
    if (d_k is None or d_v is None) and d_model % heads != 0:
        divisors = _divisors(d_model)
        ok = ", ".join(map(str, divisors[:12])) + (", ..." if len(divisors) > 12 else "")
        raise ConfigError(
            f"d_model={d_model} is not divisible by heads={heads}; heads must divide d_model ({ok})"
            " or give both --d-k and --d-v"
        )


def check_length(seq_len: Union[int, str], kind: Optional[Kind] = None, max_seq: int = 0) -> None:
    """A number, or a name for polynomials in it; within a learned position table."""
    if isinstance(seq_len, str):
        if not _NAME.match(seq_len):
            raise ConfigError(f"--seq-len {seq_len!r} is neither a positive integer nor a name such as S")
        if kind is not None and kind.learned_positions and max_seq < max(SYMBOLIC_POINTS):
            raise ConfigError(
                f"--seq-len {seq_len} is measured at {seq_len} = {', '.join(map(str, SYMBOLIC_POINTS))}, "
                f"more than max_seq={max_seq} positions of --model {kind.name}; give --max-seq >= {max(SYMBOLIC_POINTS)}"
            )
        return
    _require_size("seq_len", seq_len)
    if kind is not None and kind.learned_positions and seq_len > max_seq:
        raise ConfigError(
            f"--seq-len {seq_len} exceeds max_seq={max_seq}, the learned position table of --model {kind.name};"
            f" give --seq-len <= {max_seq} or --max-seq >= {seq_len}"
        )


def parse_length(text: Union[int, str, None], default: int = 128) -> Union[int, str]:
    """``'128'`` -> 128; a name stays a name (checked); a sign or zero is checked as a number."""
    if text is None:
        return default
    if isinstance(text, str) and text.strip().lstrip("+-").isdigit():
        text = int(text)
    check_length(text)
    return text


def resolve_config(
    model: Optional[str] = None, preset: Optional[str] = None, *, d_model: Optional[int] = None,
    heads: Optional[int] = None, layers: Optional[int] = None, d_ff: Optional[int] = None,
    d_k: Optional[int] = None, d_v: Optional[int] = None, seq_len: Union[int, str, None] = None,
    batch: Optional[int] = None, vocab: Optional[int] = None, max_seq: Optional[int] = None,
    impl: Optional[str] = None,
) -> ReportConfig:
    """Defaults (the paper's base encoder), then the preset, then explicit values; validated."""
    _check_choices(model, preset, impl)
    model = model or (PRESETS[preset].kind if preset else "encoder")
    kind = KINDS[model]
    flags = dict(d_model=d_model, heads=heads, layers=layers, d_ff=d_ff, d_k=d_k, d_v=d_v, vocab=vocab,
                 max_seq=max_seq, impl=impl)
    _check_applies(kind, flags)
    for name, value in flags.items():
        if value is not None and name != "impl":
            _require_size(name, value)
    if batch is not None:
        _require_size("batch", batch)
    values: dict[str, Any] = dict(d_model=512, heads=8, layers=6, segments=2, **FAMILY_DEFAULTS[family(model)])
    if preset:
        values.update(PRESETS[preset].values())
    values.update({k: v for k, v in flags.items() if v is not None})
    values.setdefault("d_ff", 4 * values["d_model"])
    length = parse_length(seq_len)
    check_length(length, kind, values["max_seq"])
    per_head = max(values["d_model"] // values["heads"], 1)  # before the heads check: it factors d_model
    _check_fits({"d_k": per_head, "d_v": per_head, **values}, batch or 1,
                max(SYMBOLIC_POINTS) if isinstance(length, str) else length)
    _check_heads(values["d_model"], values["heads"], values.get("d_k"), values.get("d_v"))
    for name in ("d_k", "d_v"):
        values.setdefault(name, values["d_model"] // values["heads"])
    if "max_seq" not in kind.uses and isinstance(length, int):
        values["max_seq"] = max(values["max_seq"], length)  # sinusoidal positions: no parameters
    return ReportConfig(model=model, sizes=make_sizes(values), seq_len=length, batch=batch or 1, preset=preset)
