"""The events the evaluator emits where an operation may be wrong; checks register for them by type.

Each event carries the nodes and the tracked values the checks need; the
evaluator has already computed the operation's result, so checks only read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from shapecheck.lint.tracking import Target, Tensor, Value


@dataclass(frozen=True)
class Softmax:
    """``softmax(x, dim)`` in any spelling; ``made`` is the ``nn.Softmax(...)`` call when a module does it."""

    call: ast.Call
    source: Optional[ast.expr]
    tensor: Tensor
    dim: Optional[ast.expr]
    has_dim: bool


@dataclass(frozen=True)
class Scaled:
    """A tensor multiplied or divided by ``factor``; ``kind`` is what the factor is made of."""

    node: ast.AST
    tensor: Tensor
    factor: ast.expr
    kind: str


@dataclass(frozen=True)
class Reshape:
    call: ast.Call
    kind: str  # "view" or "reshape"
    tensor: Tensor
    target: Optional[list[Target]]


@dataclass(frozen=True)
class MaskedFill:
    call: ast.Call
    receiver: Optional[ast.expr]
    tensor: Optional[Value]
    mask: Optional[ast.expr]
    fill: Optional[ast.expr]


@dataclass(frozen=True)
class Discarded:
    """An expression statement: a call whose result nobody keeps."""

    call: ast.Call


@dataclass(frozen=True)
class FunctionalDropout:
    call: ast.Call
    name: str


@dataclass(frozen=True)
class FusedAttention:
    """``F.scaled_dot_product_attention`` or a flash-attn function; ``dropout`` is its probability argument,
    ``scale`` its scale argument (None: the default 1/√d_head), ``query`` and ``key`` what is known of them."""

    call: ast.Call
    name: str
    dropout: Optional[ast.expr]
    scale: Optional[ast.expr] = None
    query: Optional[Tensor] = None
    key: Optional[Tensor] = None


@dataclass(frozen=True)
class Construct:
    """A call of ``nn.<Layer>(...)`` or of a class named like one."""

    call: ast.Call
    layer: str


@dataclass(frozen=True)
class Rotary:
    """A call of a rotary embedding (``apply_rotary_pos_emb``, ``self.rotary_emb``); ``heads`` holds each argument
    (or a part of one, ``cos[:q.shape[1]]``) whose tracked value is the size of the heads axis, ``axis`` a literal
    ``seq_dim=`` that names the heads axis of the tensor given."""

    call: ast.Call
    heads: tuple[ast.expr, ...]
    axis: Optional[ast.expr] = None


@dataclass(frozen=True)
class OwnDtype:
    """``f(m, ..., m.dtype)``: a call given the dtype of its own first argument (``dtype`` is that argument)."""

    call: ast.Call
    dtype: ast.Attribute


@dataclass(frozen=True)
class NormaliserProduct:
    """A linear-attention normaliser (the queries against the keys summed over the positions) used as a factor of a
    product (``einsum(..., D)``, ``out * D``, ``out @ D``); ``operand`` is the normaliser's expression."""

    node: ast.AST
    operand: ast.expr


@dataclass(frozen=True)
class OwnParameterKeyword:
    """``f(..., name=other)`` inside a function that has a parameter ``name`` of its own (``keyword`` is the
    argument)."""

    call: ast.Call
    keyword: ast.keyword


@dataclass(frozen=True)
class MaskAdded:
    """``tensor + mask``: an additive mask (a name with ``mask`` in it) added to a tensor."""

    node: ast.AST
    tensor: Tensor
    mask: ast.expr


@dataclass(frozen=True)
class MaskMultiplied:
    """``probs * mask``, ``probs *= ~mask``: attention probabilities multiplied by a mask (a name with ``mask`` in it,
    not a dropout's)."""

    node: ast.AST
    tensor: Tensor
    mask: ast.expr


@dataclass(frozen=True)
class Branches:
    """An ``if`` statement whose test has been evaluated, before its arms are walked."""

    node: ast.If


@dataclass(frozen=True)
class Choice:
    """A conditional expression ``a if test else b`` whose parts have been evaluated."""

    node: ast.IfExp


@dataclass(frozen=True)
class NamedCall:
    """A call a check watches, ``name`` the last part of what is called: lookups with a default (``get``,
    ``setdefault``, ``pop``, ``getattr``), writes by index (``index_copy_``, ``index_put_``), expansions
    (``expand_as``, ``expand``), reshapes (``rearrange``, ``unsqueeze``), a class of the same file built, and a
    plain name or ``self.<name>`` given two or more plain names as positional arguments."""

    call: ast.Call
    name: str


@dataclass(frozen=True)
class TensorMethod:
    """``t.name(...)`` where ``t`` is a tensor the function made (not a parameter, whose type it never shows) and
    ``name`` is none of the methods lint follows."""

    call: ast.Call
    name: str


@dataclass(frozen=True)
class ProjectedPerHead:
    """``self.attr(x)``, ``attr`` an ``nn.Linear`` whose input is one head's size, on ``x`` already split into
    heads (``[..., heads, d_head]``)."""

    call: ast.Call
    attr: str
    made: ast.Call


@dataclass(frozen=True)
class FunctionDone:
    """A function's body has been walked (its scope is still current): for checks that read the whole body."""

    node: ast.AST
