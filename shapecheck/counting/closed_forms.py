"""Closed forms, parameters and matmul FLOPs (2 per multiply-add), for the parts audit's recogniser finds (``anatomy``).

Symbols: ``B`` batch, ``S`` query tokens per sequence, ``S_k`` keys each query attends to
(``S`` in a forward pass, the cache length in decode), ``d_model``, ``h`` query heads,
``h_kv`` key/value heads, ``d_head``, ``d_ff``, ``E`` experts, ``k`` experts per token,
``d_in``/``d_out`` (a Linear), ``rows`` (an embedding table), ``buckets`` (T5's relative position buckets);
latent attention's ``r_q``/``r_kv`` (q_lora_rank, kv_lora_rank), ``d_nope``, ``d_rope`` (qk_nope/qk_rope_head_dim), ``d_v``.

Sources:
- A Linear costs 2 FLOPs per weight per token (Kaplan et al. 2020, section 2.1).
- Attention (Vaswani et al. 2017, 3.2.2) with grouped key/value heads (Ainslie et al. 2023, GQA;
  Shazeer 2019, MQA: h_kv = 1): W_Q ∈ R^{d_model × h·d_head}, W_K, W_V ∈ R^{d_model × h_kv·d_head},
  W_O ∈ R^{h·d_head × d_model}; QKᵀ and softmax·V each 2·B·h·S·S_k·d_head (Hoffmann et al. 2022,
  App. F), the full S × S_k matrix, as torch.utils.flop_counter counts it.
- Gated feed-forward (Shazeer 2020, SwiGLU/GeGLU): three matrices d_model × d_ff.
- Mixture of experts (Fedus et al. 2021; Jiang et al. 2024, Mixtral): E experts, a router of E·d_model
  weights; each token goes to k experts (the routing assumption: FLOPs of k experts per token).
- Multi-head latent attention (Liu et al. 2024, DeepSeek-V2, section 2.1): the query from W_Q (d_model × h·(d_nope +
  d_rope)) or low-rank, W_DQ (d_model × r_q), an RMSNorm of r_q, W_UQ (r_q × h·(d_nope + d_rope)); keys and values from one
  latent W_DKV with the shared rotary key W_KR (d_model × (r_kv + d_rope)), an RMSNorm of r_kv, and their per-head
  expansion W_UK, W_UV (r_kv × h·(d_nope + d_v)), counted once per token (decode: the new token's, as report
  measures decode; transformers' class re-expands every cached latent, 2·B·S_k·r_kv·h·(d_nope + d_v) more per step,
  and the paper's absorbed W_UK/W_UV expand none);
  W_O (h·d_v × d_model); QKᵀ 2·B·h·S·S_k·(d_nope + d_rope), softmax·V 2·B·h·S·S_k·d_v.
- Norms, embeddings (a gather) and rotary embeddings (elementwise) do no matmul work.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sympy

from shapecheck.counting.anatomy import Part

B, S, S_k = sympy.symbols("B S S_k", positive=True, integer=True)
d_model, h, h_kv, d_head, d_ff, E, k, d_in, d_out, rows, buckets, qk_norm, d_shared, d_gate, table = sympy.symbols(
    "d_model h h_kv d_head d_ff E k d_in d_out rows buckets qk_norm d_shared d_gate table", positive=True, integer=True
)
r_q, r_kv, d_nope, d_rope, d_v = sympy.symbols("r_q r_kv d_nope d_rope d_v", positive=True, integer=True)
ZERO = sympy.Integer(0)


@dataclass(frozen=True)
class Form:
    """A part's closed forms: parameters, active parameters (MoE: k of E experts), matmul FLOPs."""

    params: sympy.Expr
    active: sympy.Expr
    flops: sympy.Expr
    core: sympy.Expr = ZERO  # the part of ``flops`` that grows with S_k (attention scores and values)


def _linear(d_in_: Any, d_out_: Any, bias: bool) -> tuple[sympy.Expr, sympy.Expr]:
    return d_in_ * d_out_ + (d_out_ if bias else 0), 2 * B * S * d_in_ * d_out_


def _attention(part: Part) -> Form:
    bias = part.flags["bias"]
    shapes = {"q": (d_model, h * d_head), "k": (d_model, h_kv * d_head), "v": (d_model, h_kv * d_head)}
    if "d_out" in part.sizes:
        shapes["o"] = (h * d_head, d_model if part.sizes["d_out"] == part.sizes["d_model"] else d_out)
    params, flops = ZERO, ZERO
    for role, (i, o) in shapes.items():
        p, f = _linear(i, o, bias[role])
        params, flops = params + p, flops + f
    core = 2 * (2 * B * h * S * S_k * d_head)
    if part.flags.get("relative"):
        params += buckets * h  # T5's relative position bias table: a gather, no matmul
    if part.flags.get("qk_norm"):
        params += qk_norm  # q/k norm gains (Qwen3, Olmo2, Gemma3, Cohere): elementwise, no matmul
    if part.flags.get("table"):
        params += table  # a relative-position bias table held by the block (Swin, Liu et al. 2021 §3.2): a gather
    if not part.flags.get("grouped", True):  # as many key/value heads as query heads: h_kv = h
        params, flops = params.subs(h_kv, h), flops.subs(h_kv, h)
    return Form(params, params, flops + core, core)


def latent_projections(bias: dict[str, bool], low_rank: bool) -> tuple[sympy.Expr, sympy.Expr]:
    """Multi-head latent attention's projections (DeepSeek-V2 section 2.1), their norms left out: (params, FLOPs).

    ``bias``: which of q (or q_a, q_b), kv_a, kv_b, o have a bias."""
    shapes = {"kv_a": (d_model, r_kv + d_rope), "kv_b": (r_kv, h * (d_nope + d_v)), "o": (h * d_v, d_model)}
    shapes.update({"q_a": (d_model, r_q), "q_b": (r_q, h * (d_nope + d_rope))} if low_rank else
                  {"q": (d_model, h * (d_nope + d_rope))})
    params, flops = ZERO, ZERO
    for role, (i, o) in shapes.items():
        p, f = _linear(i, o, bias.get(role, False))
        params, flops = params + p, flops + f
    return params, flops


def _latent(part: Part) -> Form:
    low_rank = bool(part.flags.get("low_rank"))
    params, flops = latent_projections(part.flags["bias"], low_rank)
    params += r_kv + (r_q if low_rank else 0)  # the RMSNorm gains of the latents: elementwise, no matmul
    core = 2 * B * h * S * S_k * (d_nope + d_rope) + 2 * B * h * S * S_k * d_v
    return Form(params, params, flops + core, core)


def _ffn(gated: bool, bias: bool) -> tuple[sympy.Expr, sympy.Expr]:
    n = 3 if gated else 2
    params = n * d_model * d_ff + ((n - 1) * d_ff + d_model if bias else 0)
    return params, 2 * B * S * n * d_model * d_ff


def _moe(part: Part) -> Form:
    """Routed experts (k of E per token) and, where present, shared experts every token visits (DeepSeek-V2/V3,
    Qwen2-MoE: Dai et al. 2024, DeepSeekMoE, section 3.2), of total width d_shared."""
    expert_params, expert_flops = _ffn(part.flags["expert"] == "gated_mlp", False)
    router = E * d_model
    shared_params, shared_flops = ZERO, ZERO
    if part.flags.get("shared"):
        shared_params, shared_flops = _ffn(part.flags["shared"] == "gated_mlp", False)
        shared_params, shared_flops = shared_params.subs(d_ff, d_shared), shared_flops.subs(d_ff, d_shared)
    if "gate_bias" in part.flags:  # a Linear gating the shared experts (Qwen2-MoE), d_model → d_gate
        gate_params, gate_flops = _linear(d_model, d_gate, part.flags["gate_bias"])
        shared_params, shared_flops = shared_params + gate_params, shared_flops + gate_flops
    return Form(E * expert_params + router + shared_params, k * expert_params + router + shared_params,
                k * expert_flops + 2 * B * S * d_model * E + shared_flops)


def _key(part: Part) -> tuple:
    """What a part's formula depends on besides its sizes' values: its kind and flags."""
    flags = {key: value for key, value in part.flags.items() if key != "window"}
    if part.kind == "attention" and flags.get("latent"):
        flags["bias"] = tuple(sorted(flags["bias"].items()))
        return part.kind, tuple(sorted(flags.items()))
    if part.kind == "attention":
        flags["out"] = None if "d_out" not in part.sizes else part.sizes["d_out"] == part.sizes["d_model"]
        flags["bias"] = tuple(sorted(flags["bias"].items()))
        flags["grouped"] = part.sizes.get("h_kv") != part.sizes.get("h")
    return part.kind, tuple(sorted(flags.items()))


@functools.lru_cache(maxsize=None)
def _form(key: tuple) -> Form:
    kind, flags = key[0], dict(key[1])
    if kind == "attention" and flags.get("latent"):
        return _latent(Part(kind, {}, {**flags, "bias": dict(flags["bias"])}))
    if kind == "attention":
        sizes = {} if flags["out"] is None else {"d_out": 1 if flags["out"] else 2, "d_model": 1}
        return _attention(Part(kind, sizes, {"bias": dict(flags["bias"]), "relative": flags.get("relative"),
                                             "grouped": flags["grouped"], "qk_norm": flags.get("qk_norm"),
                                             "table": flags.get("table")}))
    if kind in ("mlp", "gated_mlp"):
        params, flops = _ffn(kind == "gated_mlp", flags["bias"])
        return Form(params, params, flops)
    if kind == "moe":
        return _moe(Part(kind, {}, flags))
    if kind == "linear":
        params, flops = _linear(d_in, d_out, flags["bias"])
        return Form(params, params, flops)
    if kind == "norm":
        params = d_model if flags["rms"] else 2 * d_model
        return Form(params, params, ZERO)
    return Form(rows * d_model, rows * d_model, ZERO)  # embedding


def form(part: Part) -> Form:
    """The closed forms of ``part`` (cached per kind and flags: every layer of a model shares them)."""
    return _form(_key(part))


def values(part: Part, batch: int, seq: int, keys: int) -> dict[sympy.Symbol, int]:
    """The symbol values of ``part`` at ``batch`` × ``seq`` query tokens attending to ``keys`` keys."""
    names = {"d_model": d_model, "h": h, "h_kv": h_kv, "d_head": d_head, "d_ff": d_ff, "E": E, "k": k,
             "d_in": d_in, "d_out": d_out, "rows": rows, "buckets": buckets, "qk_norm": qk_norm, "d_shared": d_shared,
             "d_gate": d_gate, "table": table, "r_q": r_q, "r_kv": r_kv, "d_nope": d_nope, "d_rope": d_rope, "d_v": d_v}
    found = {names[key]: value for key, value in part.sizes.items() if key in names}
    return {**found, B: batch, S: seq, S_k: keys}


def evaluate(expr: sympy.Expr, at: dict[sympy.Symbol, int]) -> int:
    return int(expr.subs(at)) if expr.free_symbols else int(expr)


def crossover_length(flops: sympy.Expr) -> sympy.Expr:
    """The length S at which a FLOP polynomial's S² terms equal its S-linear terms (S_k = S): b / a for a·S² + b·S.

    For one attention block that is 2·d_model whatever h and d_head; for a post-norm encoder layer
    2·d_model + d_model·d_ff / (h·d_head), which is 6·d_model when d_ff = 4·d_model and h·d_head = d_model.
    """
    poly = sympy.Poly(sympy.expand(flops.subs(S_k, S)), S)
    quadratic, linear = poly.coeff_monomial(S**2), poly.coeff_monomial(S)
    return sympy.factor(linear / quadratic) if quadratic != 0 else sympy.oo


def crossovers(parts: dict[str, Part], layers: list[str] = ()) -> dict[str, Any]:
    """Where the S² terms overtake the S-linear ones: the first attention block alone, and its whole layer.

    The layer is the item of ``layers`` (the model's stacked layers) that holds that attention; its formula is
    the sum of the closed forms of the parts in it (norms and embeddings do no matmul work).
    """
    first = next((p for p, part in parts.items() if part.kind == "attention"), None)
    if first is None:
        return {}
    chosen = {"attention": [first]}
    layer = next((path for path in layers if first.startswith(path + ".")), "")
    if layer:
        chosen["layer"] = [p for p in parts if p.startswith(layer + ".")]
    result = {}
    for label, paths in chosen.items():
        formula = crossover_length(sum((form(parts[p]).flops for p in paths), ZERO))
        at = {}
        for p in paths:
            at.update(values(parts[p], 1, 1, 1))
        value = formula.subs(at)
        result[label] = {"module": layer if label == "layer" else first, "formula": formula,
                         "value": int(value) if value.is_Integer else value}
    return result


PART_GROUPS = {"attention": "projection", "mlp": "ffn", "gated_mlp": "ffn", "moe": "ffn", "linear": "head"}


def flops_by_part(parts: dict[str, Part], lengths: list[int], batch: int = 1) -> dict[str, list[int]]:
    """Closed-form FLOPs of the recognised parts at each length, grouped: attention scores and values
    ("attention"), the attention's projections ("projection"), feed-forward ("ffn"), other Linear ("head")."""
    grouped: dict[str, sympy.Expr] = {}
    for part in parts.values():
        if part.kind not in PART_GROUPS:
            continue
        f = form(part)
        at = {key: value for key, value in values(part, batch, 1, 1).items() if key not in (S, S_k)}
        core = f.core.subs(at).subs(S_k, S)
        grouped[PART_GROUPS[part.kind]] = grouped.get(PART_GROUPS[part.kind], ZERO) + f.flops.subs(at).subs(S_k, S) - core
        if core != 0:
            grouped["attention"] = grouped.get("attention", ZERO) + core
    polys = {name: sympy.expand(expr) for name, expr in grouped.items()}
    return {name: [int(expr.subs(S, n)) for n in lengths] for name, expr in polys.items() if expr != 0}
