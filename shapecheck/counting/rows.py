"""Report rows: a name, a closed-form ``Cost``, and where to measure it in the real module.

A ``RowSpec`` says which module's parameters belong to the row (``params_at``)
and which module's matmul ops (``flops_at``, optionally one ``part`` such as
``scores`` or ``av`` of an attention module's own products). The builders here
compose rows for the blocks every model family shares: multi-head attention,
the feed-forward network, norms, residual adds, embeddings, Linear heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import sympy

from shapecheck.counting import formulas as f
from shapecheck.counting.formulas import Cost


@dataclass(frozen=True)
class RowSpec:
    """One row of a report: its formula and the module path(s) its measured values come from."""

    name: str
    cost: Cost
    params_at: Optional[str] = None  # module whose parameters the row owns (first row wins for shared ones)
    flops_at: Optional[str] = None  # module whose matmul ops the row owns
    part: Optional[str] = None  # only this part label of those ops (None: any)
    kind: str = ""  # projection, attention, ffn, norm, embedding, head, elementwise
    note: str = ""


def join(*names: str) -> str:
    """Dotted path from non-empty pieces: join("", "q_proj") == "q_proj"."""
    return ".".join(n for n in names if n)


def linear_row(path: str, cost: Cost, kind: str, note: str = "") -> RowSpec:
    """A Linear layer: its parameters and its matmuls both live at ``path``."""
    return RowSpec(path, cost, params_at=path, flops_at=path, kind=kind, note=note)


def attention_rows(
    core: str, q: str, k: str, v: str, o: str, qkv: Optional[str] = None,
    seq_q: sympy.Expr = f.S, seq_k: sympy.Expr = f.S,
) -> list[RowSpec]:
    """Q, K, V (or one fused ``qkv``) projections, scores QKᵀ, softmax, AV, output projection.

    ``core`` is the module that runs the products QKᵀ and softmax·V itself.
    """
    proj = f.attention_projections(seq_q, seq_k)
    if qkv is not None:
        rows = [linear_row(qkv, proj["q"] + proj["k"] + proj["v"], "projection", "W_Q, W_K, W_V fused")]
    else:
        rows = [linear_row(path, proj[p], "projection") for p, path in (("q", q), ("k", k), ("v", v))]
    rows += [
        RowSpec(join(core, "scores"), f.attention_scores(seq_q, seq_k), flops_at=core, part="scores", kind="attention",
                note="QKᵀ / √d_k"),
        RowSpec(join(core, "softmax"), f.attention_softmax(seq_q, seq_k), kind="attention"),
        RowSpec(join(core, "av"), f.attention_values(seq_q, seq_k), flops_at=core, part="av", kind="attention",
                note="softmax · V"),
        linear_row(o, proj["o"], "projection"),
    ]
    return rows


def ffn_rows(w_1: str, w_2: str, activation: str, act_name: str) -> list[RowSpec]:
    """W₁ (d_model -> d_ff), the activation, W₂ (d_ff -> d_model) (Vaswani et al. 2017, section 3.3)."""
    tokens = f.B * f.S
    return [
        linear_row(w_1, f.linear(f.d_model, f.d_ff, tokens), "ffn"),
        RowSpec(act_name, f.activation(activation, f.d_ff), kind="ffn", note=activation),
        linear_row(w_2, f.linear(f.d_ff, f.d_model, tokens), "ffn"),
    ]


def norm_row(path: str) -> RowSpec:
    return RowSpec(path, f.layer_norm(), params_at=path, kind="norm")


def residual_row(layer: str, adds: int) -> RowSpec:
    return RowSpec(join(layer, "residual"), f.elementwise(adds), kind="elementwise", note=f"{adds} residual adds")


def embedding_row(path: str, rows: sympy.Expr, note: str = "") -> RowSpec:
    return RowSpec(path, f.embedding(rows), params_at=path, kind="embedding", note=note)
