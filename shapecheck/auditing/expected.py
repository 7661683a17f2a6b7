"""The formula each recognised submodule should follow, and its differences from it explained in words.

Formulas come from ``shapecheck.counting.formulas`` (Vaswani et al. 2017,
sections 3.2.2 and 3.3): ``attention_projections`` for W_Q, W_K, W_V, W_O,
``linear`` for each projection, ``layer_norm``, ``embedding``. The gated
feed-forward (3·d_model·d_ff, Shazeer 2020 "GLU Variants", eq. 5) and the
weight-only norm (RMSNorm, Zhang & Sennrich 2019: d_model) are added here.

A block's bias convention is what its config or family declares per role
(``conventions.py``: Whisper's bias-free key projection, Qwen2's output projection
without a bias are clean); roles nobody declares follow the majority of the block's
projections (a tie counts as biased), so one projection that lacks a bias is reported
against the rest: ``k_proj has no bias: −d_model``. A model with two widths keeps
two symbols: ALBERT's embeddings are ``E`` wide, its layers ``d_model`` (H). ``expected + Σ differences == counted`` always
holds: what the named differences do not explain is reported as "unexplained".
"""

from __future__ import annotations

from typing import Optional

import sympy

from shapecheck.auditing.projections import Projection
from shapecheck.auditing.recognize import Match
from shapecheck.auditing.result import Component, Difference
from shapecheck.auditing.symbolic import ALL_SYMBOLS, Dims, h_kv, hd_k, hd_v, kdim, vdim
from shapecheck.display import show, signed
from shapecheck.counting import formulas as F

ROLE_WORDS = {"q": "query", "k": "key", "v": "value", "o": "out", "qkv": "fused q/k/v"}


def _bias_expected(parts: list[Projection]) -> bool:
    with_bias = sum(p.has_bias for p in parts)
    return 2 * with_bias >= len(parts)


def _role_biases(match: Match) -> dict[str, bool]:
    """Role -> whether the formula gives it a bias: declared by config or family, else the majority of the rest."""
    declared: dict[str, bool] = dict(match.info.get("declared_bias") or {})  # type: ignore[call-overload]
    if "qkv" in match.parts and "q" in declared:
        declared["qkv"] = declared["q"]
    roles = [r for r in match.parts if r in ("q", "k", "v", "o", "qkv")]
    free = [match.parts[r] for r in roles if r not in declared]
    majority = _bias_expected(free) if free else True
    return {role: declared.get(role, majority) for role in ("q", "k", "v", "o", "qkv")}


def _component(match: Match, formula: sympy.Expr, dims: Dims, values: dict[str, int], diffs: list[Difference],
               note: str = "") -> Component:
    expected = int(sympy.sympify(formula).subs({_symbol(k): v for k, v in values.items()}))
    counted = sum(p.numel() for _, p in match.all_params())
    gap = counted - expected - sum(d.amount for d in diffs)
    if gap:
        diffs.append(Difference("unexplained", gap, signed(gap)))
    names = tuple(match.full_name(n) for n, _ in match.all_params())
    return Component(match.path, match.kind, match.style, show(formula), values, expected, counted, tuple(diffs), names, note)


def _symbol(name: str) -> sympy.Symbol:
    """A size's symbol: the audit's own, or one of the counting closed forms' (latent attention's r_kv, d_rope ...)."""
    return ALL_SYMBOLS.get(name) or sympy.Symbol(name, positive=True, integer=True)


# ---------------------------------------------------------------- attention


def latent_attention(match: Match, dims: Dims) -> Component:
    """Multi-head latent attention's projections (DeepSeek-V2 section 2.1; the formula is counting's closed form,
    its latents' norms are rows of their own here)."""
    from shapecheck.counting.closed_forms import latent_projections  # counting reads this package: import late

    info = match.info
    formula, _ = latent_projections({role: p.has_bias for role, p in match.parts.items()}, "q_a" in match.parts)
    names = ("h", "r_q", "r_kv", "d_nope", "d_rope", "d_v")
    values = {"d_model": match.parts["kv_a"].d_in, **{n: int(info[n]) for n in names if n in info}}  # type: ignore[call-overload]
    return _component(match, formula, dims, values, _extras(match, dims), "decoupled rotary keys: d_rope shared by all heads")


class _AttentionSizes:
    """d_model, the query/key width W_qk = h·d_k and the value width W_v = h·d_v of one block."""

    def __init__(self, match: Match) -> None:
        p = match.parts
        first = p.get("q") or p.get("qkv") or p.get("k") or p.get("v")
        self.d_model = first.d_in if first else p["o"].d_out
        if "v" in p:
            self.w_v = p["v"].d_out
        elif "o" in p:
            self.w_v = p["o"].d_in
        else:
            self.w_v = p["qkv"].d_out // 3 if "qkv" in p else self.d_model
        if "q" in p or "k" in p:
            self.w_qk = (p.get("q") or p["k"]).d_out
        else:
            self.w_qk = (p["qkv"].d_out - self.w_v) // 2 if "qkv" in p else self.w_v
        self.heads = match.heads
        self.kv_heads = self._kv_heads(p)
        if self.kv_heads:
            self.w_v = self.w_qk  # grouped-query attention: W_O reads h·d_v = h·d_k

    def _kv_heads(self, p: dict) -> Optional[int]:
        """Grouped-query attention (Ainslie et al. 2023): k and v have h_kv < h heads of width d_k."""
        h, w_kv = self.heads, p["k"].d_out if "k" in p else self.w_qk
        if not h or "v" not in p or w_kv == self.w_qk or p["v"].d_out != w_kv or self.w_qk % h:
            return None
        d_head = self.w_qk // h
        return w_kv // d_head if w_kv % d_head == 0 and ("o" not in p or p["o"].d_in == self.w_qk) else None

    def substitutions(self) -> tuple[dict[sympy.Symbol, sympy.Expr], dict[str, int]]:
        """How h·d_k and h·d_v appear in the formula, and the values of the symbols it keeps."""
        values = {"d_model": self.d_model}
        if self.kv_heads:
            d_head = self.w_qk // self.heads  # type: ignore[operator]
            return {}, {**values, "h": self.heads, "h_kv": self.kv_heads, "d_k": d_head, "d_v": d_head}  # type: ignore[dict-item]
        if self.w_qk == self.d_model and self.w_v == self.d_model:
            return {F.d_k: F.d_model / F.h, F.d_v: F.d_model / F.h}, values
        h = self.heads
        if h and self.w_qk % h == 0 and self.w_v % h == 0:
            return {}, {**values, "h": h, "d_k": self.w_qk // h, "d_v": self.w_v // h}
        return {F.d_k: hd_k / F.h, F.d_v: hd_v / F.h}, {**values, "h·d_k": self.w_qk, "h·d_v": self.w_v}


def _role_terms(match: Match, sizes: _AttentionSizes, biases: dict[str, bool]) -> dict[str, tuple[sympy.Expr, sympy.Expr]]:
    """(weights, biases) of each projection the formula has, in config symbols."""
    weights = {role: cost.params for role, cost in F.attention_projections(bias=False).items()}
    full = {role: cost.params for role, cost in F.attention_projections(bias=True).items()}
    fused = "qkv" in match.parts
    terms = {role: (weights[role], (full[role] - weights[role]) if biases["qkv" if fused and role != "o" else role] else sympy.Integer(0))
             for role in weights}
    for role, symbol in (("k", kdim), ("v", vdim)):  # cross-attention with other input widths (kdim/vdim)
        part = match.parts.get(role)
        if part is not None and part.d_in != sizes.d_model:
            terms[role] = (terms[role][0].subs(F.d_model, symbol), terms[role][1])
    if sizes.kv_heads:  # k and v project to h_kv heads
        for role in ("k", "v"):
            terms[role] = (terms[role][0].subs(F.h, h_kv), terms[role][1].subs(F.h, h_kv))
    if "qkv" in match.parts:
        q, k, v = terms.pop("q"), terms.pop("k"), terms.pop("v")
        terms = {"qkv": (q[0] + k[0] + v[0], q[1] + k[1] + v[1]), **terms}
    return terms


def _role_difference(role: str, part: Optional[Projection], term: tuple[sympy.Expr, sympy.Expr], bias: bool, subs: dict, values: dict) -> Optional[Difference]:
    weight, bias_term = (sympy.expand(t.subs(subs)) for t in term)
    at = {ALL_SYMBOLS[k]: v for k, v in values.items()}
    if part is None:
        amount = -(weight + bias_term)
        return Difference(f"{ROLE_WORDS[role]} projection missing", int(amount.subs(at)), signed(amount))
    expected_out = int(sympy.sympify(bias_term).subs(at)) if bias else None
    want = int(weight.subs(at))
    if part.d_in * part.d_out != want or (bias and part.d_out != expected_out):
        amount = part.numel - want - (expected_out or 0)
        return Difference(f"{part.name} is {part.d_out}×{part.d_in}, the formula has {want:,} weights", amount, signed(amount)) if amount else None
    if part.has_bias and not bias:
        out_symbol = sympy.Symbol(_width_name(part, values))
        return Difference(f"{part.name} has a bias (the block's convention has none there)", part.d_out, signed(out_symbol))
    if bias and not part.has_bias:
        return Difference(f"{part.name} has no bias", -expected_out, signed(-bias_term))
    return None


def _width_name(part: Projection, values: dict[str, int]) -> str:
    for name, value in values.items():
        if value == part.d_out:
            return name
    return str(part.d_out)


def _extras(match: Match, dims: Dims) -> list[Difference]:
    """Parameters in the block that no projection accounts for, grouped by submodule."""
    groups: dict[str, list[tuple[str, int, tuple[int, ...]]]] = {}
    for name, param in match.params:
        owner = name.rpartition(".")[0] or name
        groups.setdefault(owner, []).append((name, param.numel(), tuple(param.shape)))
    found = []
    for owner, params in groups.items():
        amount = sum(n for _, n, _ in params)
        shapes = ", ".join("×".join(map(str, s)) for _, _, s in params)
        expr = sum((_shape_expr(s, dims) for _, _, s in params), sympy.Integer(0))
        found.append(Difference(f"{owner} ({shapes}) is not part of the attention formula", amount, signed(expr)))
    return found


def _shape_expr(shape: tuple[int, ...], dims: Dims) -> sympy.Expr:
    return sympy.Mul(*(dims.symbol(s) for s in shape if s != 1)) if any(s != 1 for s in shape) else sympy.Integer(1)


def attention(match: Match, dims: Dims) -> Component:
    if match.info.get("latent"):
        return latent_attention(match, dims)
    sizes = _AttentionSizes(match)
    subs, values = sizes.substitutions()
    biases = _role_biases(match)
    terms = _role_terms(match, sizes, biases)
    for role, symbol, part in (("k", "kdim", match.parts.get("k")), ("v", "vdim", match.parts.get("v"))):
        if part is not None and part.d_in != sizes.d_model:
            values[symbol] = part.d_in
    formula = sympy.expand(sum((w + b for w, b in terms.values()), sympy.Integer(0)).subs(subs))
    if "bias_k" in match.parts:  # nn.MultiheadAttention(add_bias_kv=True): bias_k and bias_v, d_model each
        formula += 2 * F.d_model
    diffs = [d for role, term in terms.items() if (d := _role_difference(role, match.parts.get(role), term, biases[role], subs, values))]
    out = match.parts.get("o")
    for dup in match.duplicates:
        expr = _shape_expr((dup.d_out, dup.d_in), dims) + (dims.symbol(dup.d_out) if dup.has_bias else 0)
        diffs.append(Difference(f"{dup.name} duplicates the output projection {out.name if out else ''}".rstrip(), dup.numel, signed(expr)))
    diffs += _extras(match, dims)
    return _component(match, formula, dims, values, diffs, _bias_note(match, biases))


def _bias_note(match: Match, biases: dict[str, bool]) -> str:
    """``bias on q, k, v (the Qwen2 family)``: the roles the formula gives a bias, and who declared them."""
    roles = [r for r in ("qkv", "q", "k", "v", "o") if r in match.parts and biases[r]]
    note = f"bias on {', '.join(roles)}" if roles else "no biases"
    declared = match.info.get("declared_by")
    return f"{note} ({declared})" if declared else note


# ---------------------------------------------------------------- feed-forward, norms, tables, single layers


def feed_forward(match: Match, dims: Dims) -> Component:
    parts = list(match.parts.values())
    bias = _bias_expected(parts)
    gated = bool(match.info["gated"])
    values = {"d_model": int(match.info["d_model"]), "d_ff": int(match.info["d_ff"])}  # type: ignore[call-overload]
    ups = F.linear(F.d_model, F.d_ff, 1, bias).params * (2 if gated else 1)
    formula = sympy.expand(ups + F.linear(F.d_ff, F.d_model, 1, bias).params)
    diffs = []
    for role, part in match.parts.items():
        width = F.d_model if role == "down" else 2 * F.d_ff if role == "gate_up" else F.d_ff
        if part.has_bias and not bias:
            diffs.append(Difference(f"{part.name} has a bias (the other layers have none)", part.d_out, signed(width)))
        elif bias and not part.has_bias:
            diffs.append(Difference(f"{part.name} has no bias", -part.d_out, signed(-width)))
    return _component(match, formula, dims, values, diffs)


def _width_symbol(width: int, dims: Dims) -> tuple[sympy.Expr, str]:
    """The symbol a width is known by (``d_model``, or ALBERT's embedding width ``E``); d_model when unnamed."""
    name = dims.names.get(int(width), "d_model")
    return ALL_SYMBOLS[name], name


def norm(match: Match, dims: Dims) -> Component:
    widths = [p.numel() for _, p in match.params]
    symbol, name = _width_symbol(widths[0], dims)
    formula = F.layer_norm().params if len(widths) == 2 else sympy.Integer(len(widths)) * F.d_model
    return _component(match, formula.subs(F.d_model, symbol), dims, {name: widths[0]}, [])


def embedding(match: Match, dims: Dims) -> Component:
    (name, table), *rest = match.params
    rows, width = table.shape[0], table.shape[-1]
    symbol = _table_symbol(match)
    width_symbol, width_name = _width_symbol(width, dims) if symbol != "buckets" else (F.h, "h")
    formula = F.embedding(ALL_SYMBOLS.get(symbol, sympy.Symbol(symbol)), width_symbol).params
    for _, param in rest:
        formula += param.numel()
    return _component(match, formula, dims, {symbol: int(rows), width_name: int(width)}, [])


def _table_symbol(match: Match) -> str:
    """The rows' symbol: vocab, max_seq, segments, or T5's relative-position ``buckets`` (h wide)."""
    table = str(match.info.get("table", "vocab"))
    return "buckets" if table == "relative" else table


def projection(match: Match, dims: Dims) -> Component:
    """ALBERT's factorised embedding projection E -> H (Lan et al. 2020, section 3.1): E·d_model + d_model."""
    part = match.parts["linear"]
    formula = F.linear(ALL_SYMBOLS["E"], F.d_model, 1, part.has_bias).params
    return _component(match, formula, dims, {"E": part.d_in, "d_model": part.d_out}, [])


def moe_router(match: Match, dims: Dims) -> Component:
    """The router: one (experts × d_model) matrix (Shazeer et al. 2017, eq. 3), plus a bias when it has one."""
    formula = ALL_SYMBOLS["experts"] * F.d_model + (ALL_SYMBOLS["experts"] if len(match.params) == 2 else 0)
    return _component(match, formula, dims, {"experts": int(match.info["experts"]), "d_model": int(match.info["d_model"])}, [])


def moe_experts(match: Match, dims: Dims) -> Component:
    """Grouped experts: each a gated (3·d_model·d_ff) or plain (2·d_model·d_ff) feed-forward without biases."""
    info = match.info
    per_expert = (3 if info["gated"] else 2) * F.d_model * F.d_ff
    values = {"experts": int(info["experts"]), "d_model": int(info["d_model"]), "d_ff": int(info["d_ff"])}  # type: ignore[call-overload]
    return _component(match, ALL_SYMBOLS["experts"] * per_expert, dims, values, [])


def single(match: Match, dims: Dims) -> Component:
    part = match.parts["linear"]
    formula = F.linear(dims.symbol(part.d_in), dims.symbol(part.d_out), 1, part.has_bias).params
    return _component(match, formula, dims, dims.values(sympy.sympify(formula)), [])


def other(match: Match, dims: Dims) -> Component:
    formula = sum((_shape_expr(tuple(p.shape), dims) for _, p in match.params), sympy.Integer(0))
    return _component(match, formula, dims, dims.values(sympy.sympify(formula)), [])


BUILDERS = {
    "attention": attention, "feed_forward": feed_forward, "norm": norm, "embedding": embedding,
    "pooler": single, "head": single, "linear": single, "other": other, "projection": projection,
    "moe_router": moe_router, "moe_experts": moe_experts,
}


def dims_of(matches: list[Match]) -> Dims:
    """Name the model's sizes from what was recognised: d_model, d_ff, vocab, max_seq, segments."""
    dims = Dims()
    for match in matches:
        if match.kind == "attention":
            dims.add("d_model", _AttentionSizes(match).d_model)
    for match in matches:
        if match.kind == "feed_forward":
            dims.add("d_model", match.info["d_model"])
            dims.add("d_ff", match.info["d_ff"])
        elif match.kind == "projection":
            dims.add("E", match.parts["linear"].d_in)
    for match in matches:
        if match.kind == "embedding" and match.info.get("table") != "relative":
            dims.add("d_model", match.params[0][1].shape[-1])
            dims.add(_table_symbol(match), match.params[0][1].shape[0])
    return dims


def components(matches: list[Match]) -> list[Component]:
    """One ``Component`` per match, its formula in the model's symbols."""
    dims = dims_of(matches)
    return [BUILDERS[m.kind](m, dims) for m in matches]
