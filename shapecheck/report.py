"""The data behind ``shapecheck report``: config, rows, total, uncounted ops. Pure data, no printing.

``resolve_config(...)`` applies defaults and a preset, validates every value
(raising ``UsageError`` / ``ConfigError`` that name the valid choices) and
returns a ``ReportConfig``. ``build_report(config)`` builds the reference
module on the meta device, counts its parameters per row (shared tensors once),
runs one forward pass under ``shapecheck.counting.dispatch`` (every layer, no
layer assumed identical to another), and returns a ``Report`` whose rows carry
the closed form, its value and the measured value side by side.

A symbolic sequence length (``seq_len="S"``) gives each row's FLOPs as a
polynomial in that name; the measured side is then counted at S = 1, 2, 3, 4
and interpolated, which is exact for any polynomial of degree <= 3.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional, Union

import sympy
import torch

from shapecheck.counting import formulas as f
from shapecheck.display import show
from shapecheck.counting.dispatch import DispatchCount, count_flops
from shapecheck.catalog import FAMILIES, FAMILY_DEFAULTS, PRESETS, Sizes, family
from shapecheck.counting.models import MODELS, ModelKind
from shapecheck.counting.peers import fvcore_macs, own_count
from shapecheck.counting.params import assign_parameters, count_parameters, on_meta, tied_parameters
from shapecheck.counting.repeats import Stack, count_with_repeats
from shapecheck.counting.rows import RowSpec
from shapecheck.errors import ConfigError, UsageError

Value = Union[int, sympy.Expr]
IMPLS = ("sdpa", "math")
INTERPOLATION_POINTS = (1, 2, 3, 4)
MAX_ELEMENTS = 2**60  # torch sizes a tensor's storage in bytes as a signed 64-bit integer
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLAG_USE = {"layers": "layers", "d_ff": "d_ff", "vocab": "vocab", "max_seq": "max_seq", "d_k": "d_k", "d_v": "d_k",
             "impl": "impl"}


@dataclass(frozen=True)
class ReportConfig:
    """Everything a report is computed from; ``seq_len`` is an int or a symbol name such as "S"."""

    model: str = "encoder"
    d_model: int = 512
    heads: int = 8
    d_k: int = 64
    d_v: int = 64
    d_ff: int = 2048
    layers: int = 6
    seq_len: Union[int, str] = 128
    batch: int = 1
    vocab: int = 37000
    max_seq: int = 512
    segments: int = 2
    impl: str = "sdpa"
    preset: Optional[str] = None

    @property
    def symbolic(self) -> bool:
        return isinstance(self.seq_len, str)

    def sizes(self) -> Sizes:
        return Sizes(self.d_model, self.heads, self.d_k, self.d_v, self.d_ff, self.layers, self.vocab,
                     self.max_seq, self.segments, self.impl)


# --- configuration ------------------------------------------------------------------------------


def _choices(values: Any) -> str:
    return ", ".join(values)


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
    if model is not None and model not in MODELS:
        raise UsageError(f"unknown model {model!r}; choose one of: {_choices(MODELS)}")
    if preset is not None and preset not in PRESETS:
        raise UsageError(f"unknown preset {preset!r}; choose one of: {_choices(PRESETS)}")
    if preset is not None and PRESETS[preset].kind not in MODELS:
        raise UsageError(f"preset {preset!r} is a {PRESETS[preset].kind} model, counted from its module tree "
                         f"(shapecheck.counting.tree), not from the built-in rows")
    if impl is not None and impl not in IMPLS:
        raise UsageError(f"unknown attention path --impl {impl!r}; choose one of: {_choices(IMPLS)}")
    if model is not None and preset is not None and family(model) != family(PRESETS[preset].kind):
        fits = FAMILIES[family(PRESETS[preset].kind)]
        raise UsageError(f"--preset {preset} contradicts --model {model}; with this preset use --model {' or '.join(fits)}")


def _check_applies(kind: ModelKind, flags: dict[str, Any]) -> None:
    for name, value in flags.items():
        if value is not None and name in _FLAG_USE and _FLAG_USE[name] not in kind.uses:
            fits = [m for m, k in MODELS.items() if _FLAG_USE[name] in k.uses]
            raise UsageError(
                f"--{name.replace('_', '-')} does not apply to --model {kind.name}; it applies to: {_choices(fits)}"
            )


def _check_heads(d_model: int, heads: int, d_k: Optional[int], d_v: Optional[int]) -> None:
    if (d_k is None or d_v is None) and d_model % heads != 0:
        divisors = _divisors(d_model)
        ok = ", ".join(map(str, divisors[:12])) + (", ..." if len(divisors) > 12 else "")
        raise ConfigError(
            f"d_model={d_model} is not divisible by heads={heads}; heads must divide d_model ({ok})"
            " or give both --d-k and --d-v"
        )


def _check_seq(seq_len: Union[int, str], kind: ModelKind, max_seq: int) -> None:
    if isinstance(seq_len, str):
        if not _NAME.match(seq_len):
            raise ConfigError(f"--seq-len {seq_len!r} is neither a positive integer nor a name such as S")
        if seq_len in f.SYMBOLS and seq_len not in ("S",):
            raise ConfigError(f"--seq-len {seq_len!r} is a config symbol; pick another name such as S or n")
        if kind.learned_positions and max_seq < max(INTERPOLATION_POINTS):
            raise ConfigError(
                f"--seq-len {seq_len} is measured at {seq_len} = {', '.join(map(str, INTERPOLATION_POINTS))}, "
                f"more than max_seq={max_seq} positions of --model {kind.name}; give --max-seq >= {max(INTERPOLATION_POINTS)}"
            )
        return
    _require_size("seq_len", seq_len)
    if kind.learned_positions and seq_len > max_seq:
        raise ConfigError(
            f"--seq-len {seq_len} exceeds max_seq={max_seq}, the learned position table of --model {kind.name};"
            f" give --seq-len <= {max_seq} or --max-seq >= {seq_len}"
        )


def numeric_length(text: Union[int, str, None], default: int = 128) -> int:
    """A sequence length that must be a number (any model but the built-in ones, which also take a name)."""
    value = _length(text)
    if isinstance(value, str):
        raise ConfigError(f"--seq-len must be a positive integer here (names such as S are for --model), got {value!r}")
    return default if value is None else value


def _length(text: Union[int, str, None]) -> Union[int, str, None]:
    """``'128'`` -> 128; a name stays a name; a sign or zero is checked as a number."""
    if isinstance(text, str) and text.strip().lstrip("+-").isdigit():
        value = int(text)
        _require_size("seq_len", value)
        return value
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
    kind = MODELS[model]
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
    values.update({k: v for k, v in flags.items() if v is not None and k != "impl"})
    values.setdefault("d_ff", 4 * values["d_model"])
    seq_len = 128 if seq_len is None else _length(seq_len)
    _check_seq(seq_len, kind, values["max_seq"])
    per_head = max(values["d_model"] // values["heads"], 1)  # before the heads check: it factors d_model
    _check_fits({"d_k": per_head, "d_v": per_head, **values}, batch or 1,
                max(INTERPOLATION_POINTS) if isinstance(seq_len, str) else seq_len)
    _check_heads(values["d_model"], values["heads"], values.get("d_k"), values.get("d_v"))
    for name in ("d_k", "d_v"):
        values.setdefault(name, values["d_model"] // values["heads"])
    if "max_seq" not in kind.uses and isinstance(seq_len, int):
        values["max_seq"] = max(values["max_seq"], seq_len)  # sinusoidal positions: no parameters
    return ReportConfig(model=model, seq_len=seq_len, batch=batch or 1, impl=impl or "sdpa", preset=preset, **values)


# --- the report ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportRow:
    name: str
    kind: str
    params: int
    params_formula: str
    flops: Value  # matmul FLOPs, 2 per multiply-add
    macs: Value
    other_flops: Value
    flops_formula: str
    other_flops_formula: str
    measured_params: int
    measured_flops: Value
    note: str = ""
    fvcore_macs: Optional[int] = None  # fvcore's count (one multiply-add = one "flop"), when asked for

    @property
    def params_agree(self) -> bool:
        return self.params == self.measured_params

    @property
    def flops_agree(self) -> bool:
        return sympy.expand(sympy.sympify(self.flops) - sympy.sympify(self.measured_flops)) == 0


@dataclass
class Report:
    config: ReportConfig
    rows: list[ReportRow]
    total: dict[str, Value]
    uncounted: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    crossover: dict[str, Any] = field(default_factory=dict)
    stacks: list[Stack] = field(default_factory=list)  # layers counted once and reused

    @property
    def agrees(self) -> bool:
        return all(r.params_agree and r.flops_agree for r in self.rows)


class _Evaluator:
    """Substitutes config values into formulas, once per distinct expression (rows repeat per layer)."""

    def __init__(self, values: dict[sympy.Symbol, Any], seq_name: Optional[str]) -> None:
        self.values, self.cache = values, {}
        self.rename = {f.S: sympy.Symbol(seq_name, positive=True, integer=True)} if seq_name else {}

    def __call__(self, expr: sympy.Expr) -> Value:
        if expr not in self.cache:
            value = sympy.expand(sympy.sympify(expr).subs(self.values))
            self.cache[expr] = int(value) if value.is_Integer else value.subs(self.rename)
        return self.cache[expr]

    def text(self, expr: sympy.Expr) -> str:
        key = ("text", expr)
        if key not in self.cache:
            self.cache[key] = str(sympy.sympify(expr).subs(self.rename))
        return self.cache[key]


def _measure(kind: ModelKind, module: torch.nn.Module, sizes: Sizes, batch: int, seq: int, repeats: bool):
    inputs = kind.inputs(sizes, batch, seq, torch.device("meta"))
    run = lambda: kind.run(module, inputs)  # noqa: E731
    with torch.no_grad():
        if repeats:
            return count_with_repeats(run, module, kind.attention_paths(sizes))
        return count_flops(run, module, kind.attention_paths(sizes)), []


@dataclass
class Measured:
    """Dispatch-counted FLOPs per row, FLOPs no row claims, uncounted ops, the stacks counted once."""

    flops: list[Value]
    unclaimed: Value
    uncounted: list[dict[str, Any]]
    stacks: list[Stack]


def attribute(specs: list[RowSpec], count: DispatchCount) -> tuple[list[int], int]:
    """FLOPs per row from dispatch records, and the FLOPs no row claims.

    A row with a ``part`` takes that part of the ops its module runs itself; a
    row without takes every op in its module's subtree. Deeper modules first.
    """
    whole: dict[str, int] = {}
    exact: dict[tuple[str, str], int] = {}
    for i, spec in enumerate(specs):
        if spec.flops_at is None:
            continue
        target = whole if spec.part is None else exact
        target.setdefault(spec.flops_at if spec.part is None else (spec.flops_at, spec.part), i)
    sums, unclaimed = [0] * len(specs), 0
    for record in count.records:
        index = exact.get((record.module, record.part))
        if index is None:
            index = next((whole[p] for p in _prefixes(record.module) if p in whole), None)
        if index is None:
            unclaimed += record.flops
        else:
            sums[index] += record.flops
    return sums, unclaimed


def _prefixes(path: str) -> list[str]:
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts), -1, -1)]


def measure_rows(config: ReportConfig, module: torch.nn.Module, specs: list[RowSpec], repeats: bool = True) -> Measured:
    """Per-row measured FLOPs: ints, or polynomials in the seq symbol (counted at S = 1..4, interpolated)."""
    kind, sizes = MODELS[config.model], config.sizes()
    if not config.symbolic:
        count, stacks = _measure(kind, module, sizes, config.batch, config.seq_len, repeats)
        sums, unclaimed = attribute(specs, count)
        return Measured(sums, unclaimed, count.uncounted_list(), stacks)
    seq = sympy.Symbol(config.seq_len, positive=True, integer=True)
    samples, uncounted = [], {}
    for s in INTERPOLATION_POINTS:
        count, stacks = _measure(kind, module, sizes, config.batch, s, repeats)
        samples.append(attribute(specs, count))
        uncounted.update({entry["op"]: entry for entry in count.uncounted_list()})
    fit = lambda ys: sympy.expand(sympy.interpolate(list(zip(INTERPOLATION_POINTS, ys)), seq))  # noqa: E731
    sums = [fit([sample[0][i] for sample in samples]) for i in range(len(specs))]
    return Measured(sums, fit([sample[1] for sample in samples]), list(uncounted.values()), stacks)


def _rows(config: ReportConfig, specs: list[RowSpec], params: dict[str, int], flops: list[Value]) -> list[ReportRow]:
    values = {**config.sizes().values(), f.B: config.batch}
    if not config.symbolic:
        values[f.S] = config.seq_len
    ev = _Evaluator(values, config.seq_len if config.symbolic else None)
    rows = []
    for spec, measured in zip(specs, flops):
        cost = spec.cost
        rows.append(ReportRow(
            name=spec.name, kind=spec.kind, params=ev(cost.params), params_formula=ev.text(cost.params),
            flops=ev(cost.flops), macs=ev(cost.macs), other_flops=ev(cost.other),
            flops_formula=ev.text(cost.flops), other_flops_formula=ev.text(cost.other),
            measured_params=params.get(spec.params_at, 0) if spec.params_at is not None else 0,
            measured_flops=measured, note=spec.note,
        ))
    return rows


def _extra_rows(unassigned: int, unclaimed: Value) -> list[ReportRow]:
    """Rows for parameters or FLOPs the model's row list does not explain: never dropped silently."""
    extra = []
    if unassigned:
        extra.append(ReportRow("(parameters in no row)", "unexplained", 0, "0", 0, 0, 0, "0", "0", unassigned, 0))
    if unclaimed != 0:
        extra.append(ReportRow("(FLOPs in no row)", "unexplained", 0, "0", 0, 0, 0, "0", "0", 0, unclaimed))
    return extra


def _sum(values: list[Value]) -> Value:
    if all(isinstance(v, int) for v in values):
        return sum(values)
    total = sympy.expand(sum((sympy.sympify(v) for v in values), sympy.Integer(0)))
    return int(total) if total.is_Integer else total


def _total(rows: list[ReportRow], module: torch.nn.Module) -> dict[str, Value]:
    keys = ("params", "flops", "macs", "other_flops", "measured_params", "measured_flops")
    total = {key: _sum([getattr(r, key) for r in rows]) for key in keys}
    total["model_params"] = count_parameters(module)
    return total


def crossover(kind: ModelKind, specs: list[RowSpec], sizes: Sizes) -> dict[str, Any]:
    """Sequence lengths where the S² matmul terms overtake the S-linear ones: one attention block, one layer."""
    result = {}
    for label, prefix in zip(("attention", "layer"), kind.probes):
        if prefix is None:
            continue
        chosen = [s.cost.flops for s in specs if prefix == "" or s.name == prefix or s.name.startswith(prefix + ".")]
        formula = f.crossover_length(sum(chosen, sympy.Integer(0)))
        value = formula.subs(sizes.values())
        result[label] = {"formula": str(formula), "value": int(value) if value.is_Integer else str(value)}
    return result


def _attention_block_note(config: ReportConfig) -> str:
    """One attention block's parameters as weights + biases, with and without the biases (from the formula)."""
    weights = f.multi_head_attention(bias=False).params
    biases = sympy.expand(f.multi_head_attention().params - weights)
    values = config.sizes().values()
    with_biases, without = int((weights + biases).subs(values)), int(weights.subs(values))
    square = sympy.expand((weights + biases).subs({f.d_k: f.d_model / f.h, f.d_v: f.d_model / f.h}))
    return (f"attention block params: {show(sympy.factor(weights))} weights + {show(biases)} biases = {with_biases:,} "
            f"with biases, {without:,} without ({show(square)} when h·d_k = h·d_v = d_model)")


def _notes(config: ReportConfig, module: torch.nn.Module, measured: Measured) -> list[str]:
    notes = [
        "flops: matmul FLOPs, 2 per multiply-add; macs = flops / 2; other_flops: analytic only "
        "(1 per bias/residual add or scaling, 3 per softmax element, 7 per LayerNorm element, GELU 8, ReLU/tanh 1)",
        "measured: parameters of the reference module built on the meta device (no weights allocated); "
        "FLOPs counted at dispatch level during one forward pass on the meta device",
    ]
    notes.append(_attention_block_note(config))
    for stack in measured.stacks:
        first, last = f"{stack.path}.0", f"{stack.path}.{stack.size - 1}"
        notes.append(
            f"{stack.path}.1..{stack.size - 1} are identical to {first} (same class, attributes, config and "
            f"parameter shapes, same input shapes, checked at run time): {first} was counted and its count "
            f"reused for the other {stack.size - 1} layers, up to {last}"
        )
    for group in tied_parameters(module):
        notes.append(f"tied: {' = '.join(group)} are one tensor, counted once (in the first row that owns it)")
    if config.model in ("decoder", "encoder-decoder", "gpt", "gpt-lm"):
        notes.append("causal self-attention: the full S×S score matrix is counted (as torch.utils.flop_counter)")
    if config.symbolic:
        points = ", ".join(map(str, INTERPOLATION_POINTS))
        notes.append(f"measured at {config.seq_len} = {points} and interpolated (exact up to degree 3)")
    return notes


def build_report(config: ReportConfig, repeats: bool = True, fvcore: bool = False) -> Report:
    """Rows with formulas, values and measured values for ``config``'s model; see the module docstring.

    ``repeats=False`` counts every layer op by op instead of reusing layer 0's count; ``fvcore=True``
    adds fvcore's count per row as a cross-check (numeric sequence lengths only).
    """
    kind = MODELS[config.model]
    sizes = config.sizes()
    module = on_meta(lambda: kind.build(sizes)).eval()
    specs = kind.rows(sizes)
    assignment = assign_parameters(module, [s.params_at for s in specs if s.params_at is not None])
    measured = measure_rows(config, module, specs, repeats)
    rows = _rows(config, specs, assignment.counts, measured.flops)
    rows += _extra_rows(assignment.unassigned_count, measured.unclaimed)
    notes = _notes(config, module, measured)
    if fvcore:
        rows = _with_fvcore(config, kind, module, specs, rows, notes)
    return Report(config, rows, _total(rows, module), measured.uncounted, notes,
                  crossover(kind, specs, sizes), measured.stacks)


def _with_fvcore(config: ReportConfig, kind: ModelKind, module: torch.nn.Module, specs: list[RowSpec],
                 rows: list[ReportRow], notes: list[str]) -> list[ReportRow]:
    """Rows with fvcore's MACs: a Linear row gets its module's count, a scores row its module's own products."""
    if config.symbolic:
        notes.append("fvcore: needs a numeric --seq-len; column left out")
        return rows
    counts = fvcore_macs(module, kind.inputs(config.sizes(), config.batch, config.seq_len, torch.device("meta")))
    if isinstance(counts, str):
        notes.append(f"fvcore: {counts}; column left out")
        return rows
    out = list(rows)
    for i, spec in enumerate(specs):
        if spec.flops_at is not None and spec.part is None:
            out[i] = replace(rows[i], fvcore_macs=counts.get(spec.flops_at, 0))
        elif spec.part == "scores":
            out[i] = replace(rows[i], fvcore_macs=own_count(counts, module, spec.flops_at))
    notes.append(f"fvcore: counts one multiply-add as one flop (MACs); its total {counts.get('', 0):,} MACs "
                 f"= {2 * counts.get('', 0):,} FLOPs; a scores row shows fvcore's count for QKᵀ and AV together; "
                 "fvcore has no handle for scaled_dot_product_attention, which it then counts as 0")
    return out


def flops_by_kind(config: ReportConfig, lengths: list[int]) -> dict[str, list[int]]:
    """Analytic matmul + other FLOPs per row kind (projection, attention, ffn, ...) at each sequence length."""
    kind, sizes = MODELS[config.model], config.sizes()
    specs = kind.rows(sizes)
    totals: dict[str, sympy.Expr] = {}
    for spec in specs:
        totals[spec.kind] = totals.get(spec.kind, sympy.Integer(0)) + spec.cost.flops + spec.cost.other
    values = {**sizes.values(), f.B: config.batch}
    per_kind = {k: sympy.expand(e.subs(values)) for k, e in totals.items()}
    return {k: [int(e.subs(f.S, n)) for n in lengths] for k, e in per_kind.items()}


# --- JSON ----------------------------------------------------------------------------------------

ROW_KEYS = ("name", "params", "params_formula", "flops", "macs", "other_flops", "flops_formula",
            "measured_params", "measured_flops")


def _plain(value: Any) -> Any:
    if isinstance(value, sympy.Basic):
        return int(value) if value.is_Integer else str(value)
    return value


def report_dict(report: Report) -> dict[str, Any]:
    """The stable JSON form: config, rows, total, uncounted (plus notes and crossover)."""
    rows = []
    for r in report.rows:
        row = {k: _plain(getattr(r, k)) for k in ROW_KEYS}
        row.update(kind=r.kind, other_flops_formula=r.other_flops_formula, note=r.note,
                   params_agree=r.params_agree, flops_agree=r.flops_agree)
        if r.fvcore_macs is not None:
            row["fvcore_macs"] = r.fvcore_macs
        rows.append(row)
    return {
        "config": asdict(report.config),
        "rows": rows,
        "total": {k: _plain(v) for k, v in report.total.items()},
        "uncounted": report.uncounted,
        "notes": report.notes,
        "crossover": report.crossover,
    }
