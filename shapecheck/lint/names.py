"""What identifiers in attention code mean: namespaces, projections, masks, keys, scale factors."""

from __future__ import annotations

import ast
import functools
import re
from typing import Iterable, Iterator, Optional

from shapecheck.vocabulary import canonical
from shapecheck.lint import kernels
from shapecheck.lint.tracking import EXTRA
from shapecheck.lint.nodes import subtree

FUNCTIONAL = frozenset({"F", "functional", "torch.nn.functional", "nn.functional", "torch"})
SOFTMAX = frozenset({"softmax", "log_softmax"})
PRODUCTS = frozenset({"matmul", "bmm", "einsum"})  # torch functions that multiply their tensor arguments
DROPOUT = frozenset({"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"})
# Methods that return a tensor of the same shape and strides (and the ACTIVATIONS below).
SAME_LAYOUT = frozenset({"float", "half", "double", "bfloat16", "to", "type", "type_as",
                         "clone", "detach", "abs", "neg", "tanh", "clamp", "clip"})
# Elementwise functions that turn scores into non-negative weights (sigmoid or ReLU attention, exp before a manual
# normalisation): what comes out is no longer logits, and a 0 fill masks it.
ACTIVATIONS = frozenset({"sigmoid", "logsigmoid", "relu", "relu6", "silu", "gelu", "softplus", "exp", "elu",
                         "leaky_relu", "hardsigmoid", "hardswish", "mish"})
# torch / F functions whose result has the shape and layout of their first argument (and the ACTIVATIONS).
SAME_SHAPE_FUNCTIONS = frozenset({"normalize", "layer_norm", "rms_norm", "group_norm", "tanh", "clamp", "where",
                                  "abs", "neg"})
# Submodules that keep every axis (dropout, norms, activations) or all but the last (projections).
_KEEP_ALL = re.compile(r"drop|norm|(^|_)ln(_|\d|$)|act|gelu|relu|silu|identity", re.I)
_KEEP_LEAD = re.compile(
    r"proj|linear|(^|_)(q|k|v|o|qkv|kv|wq|wk|wv|wo|w_q|w_k|w_v|w_o|to_q|to_k|to_v|to_out|out)(_|$)|query|key|value"
    r"|dense|c_attn|c_proj|(^|_)fc\d*(_|$)|(^|_)lin(_|$)",
    re.I,
)
_KEY = frozenset({"k", "v", "key", "value", "keys", "values", "kv"})
_QUERY = frozenset({"q", "query", "queries"})
# fused attention functions -> the position of their dropout probability; xformers' keyword for it (the others:
# dropout_p), read from the kernels' signatures
FUSED_ATTENTION, FUSED_DROPOUT_KEYWORD = kernels.FUSED_ATTENTION, kernels.FUSED_DROPOUT_KEYWORD
MODULE_ROOTS = frozenset({"math", "torch", "np", "numpy", "F", "nn", "self", "config", "jnp"})
NOT_AXES = frozenset({"sqrt", "rsqrt", "pow", "float", "int", "size", "shape", "item", "tensor", "scale",
                      "scaling", "softmax_scale", "dim"})


def out_of_place(method: str) -> str:
    """The out-of-place twin of an in-place tensor method (``transpose_`` -> ``transpose``, ``masked_fill_`` ->
    ``masked_fill``): both give the same value, the in-place one also stores it in its receiver."""
    return method[:-1] if len(method) > 1 and method.endswith("_") and not method.endswith("__") else method


def dotted(node: ast.AST) -> Optional[str]:
    """``torch.nn.functional`` for the attribute chain, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def functional_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> original name for module-level ``from torch.nn.functional import dropout [as drop]``."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "torch.nn.functional":
            found.update({alias.asname or alias.name: alias.name for alias in node.names})
    return found


def decorated(function: ast.AST, *names: str) -> bool:
    """A decorator of the function is one of ``names`` as written (``staticmethod``, ``torch.no_grad``)."""
    return any(dotted(d) in names for d in getattr(function, "decorator_list", ()))


def imports_from(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name -> original name for module-level ``from <module> import name [as local]``."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == module:
            found.update({alias.asname or alias.name: alias.name for alias in node.names})
    return found


def imports_torch(tree: ast.Module) -> bool:
    """Whether the module imports torch (``import torch``, ``from torch import nn``, ``import torch.nn as nn``) at its
    top level or one block down (``try: import torch``, ``if TYPE_CHECKING:``)."""
    nested = (n for s in tree.body if isinstance(s, (ast.Try, ast.If)) for n in [*s.body, *getattr(s, "orelse", ())])
    for node in [*tree.body, *nested]:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch" and not node.level:
            return True
    return False


def compiled_elsewhere(func: ast.AST) -> bool:
    """A function a compiler other than torch's runs (``@triton.jit``, ``@jax.jit``, ``@numba.njit``): its
    arithmetic follows that language's rules, not PyTorch's."""
    for decorator in getattr(func, "decorator_list", ()):
        name = dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
        if name.split(".")[-1] in ("jit", "njit", "autotune", "heuristics") and not name.startswith("torch"):
            return True
    return False


def is_namespace(node: ast.AST) -> bool:
    """True for ``torch``, ``F``, ``nn.functional``, ``torch.nn.functional``."""
    return is_namespace_name(dotted(node))


def is_namespace_name(name: Optional[str]) -> bool:
    """``is_namespace`` of the node whose dotted name this is."""
    return name is not None and (name in FUNCTIONAL or name.endswith(".functional"))


def nn_layer(func: ast.AST) -> Optional[str]:
    """``Linear`` for ``nn.Linear`` / ``torch.nn.Linear`` (a class of torch.nn), None otherwise."""
    return nn_layer_name(dotted(func))


def nn_layer_name(name: Optional[str]) -> Optional[str]:
    """``nn_layer`` of the callee whose dotted name this is."""
    if name is None:
        return None
    prefix, _, last = name.rpartition(".")
    return last if prefix in ("nn", "torch.nn") and last[:1].isupper() else None


def self_attr(node: ast.AST) -> Optional[str]:
    """``x`` for ``self.x``."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


@functools.lru_cache(maxsize=4096)
def module_kind(name: str) -> Optional[str]:
    """"all" for shape-keeping submodules, "lead" for projections, None when unknown (asked of the same few names
    at every call: answered once each)."""
    if _KEEP_ALL.search(name):
        return "all"
    return "lead" if _KEEP_LEAD.search(name) else None


def is_key_name(name: str) -> bool:
    tokens = set(name.lower().split("_"))
    return bool(tokens & _KEY) and not tokens & _QUERY


def product_operands(node: ast.AST) -> list[ast.expr]:
    """The tensors a product multiplies: ``a @ b``, ``torch.matmul(a, b)``, ``torch.bmm(a, b)``, ``torch.einsum(eq,
    a, b)``; none for anything else."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return [node.left, node.right]
    func = node.func if isinstance(node, ast.Call) else None
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called not in PRODUCTS:
        return []
    return list(node.args[1:] if called == "einsum" else node.args)  # type: ignore[attr-defined]


def named_query(node: ast.expr) -> bool:
    """The expression starts from a name that says query (``q``, ``proj_query``, ``q.transpose(1, 2)``), not key."""
    tokens = set((chain_root(node) or "").lower().split("_"))
    return bool(tokens & _QUERY) and not tokens & _KEY


def identifiers(node: ast.AST) -> list[str]:
    """Every Name id and Attribute attr under ``node``, outermost first."""
    found = []
    for sub in subtree(node):
        if isinstance(sub, ast.Name):
            found.append(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.append(sub.attr)
    return found


def scale_kind(names: list[str]) -> str:
    """"head" when a per-head size or the head count takes part, "width" for the model width alone."""
    axes = {canonical(EXTRA.get(n, n)) for n in names if n not in MODULE_ROOTS and n not in NOT_AXES}
    if axes & {"d_head", "d_k", "d_v", "heads"}:
        return "head"
    return "width" if "d_model" in axes else "other"


def int_value(node: ast.AST) -> Optional[int]:
    """The int a literal (or ``-literal``) spells."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = int_value(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def fill_value(node: Optional[ast.expr]) -> Optional[float]:
    """The number a fill value spells: literals, ``-literal``, ``float('-inf')``, ``torch.finfo(t).min`` (-inf);
    None otherwise."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = fill_value(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Call) and dotted(node.func) == "float" and len(node.args) == 1:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            try:
                return float(arg.value)
            except ValueError:
                return None
    if dotted(node) in ("math.inf", "torch.inf", "np.inf", "numpy.inf"):
        return float("inf")
    if isinstance(node, ast.Attribute) and node.attr in ("min", "max") and isinstance(node.value, ast.Call) \
            and (dotted(node.value.func) or "").split(".")[-1] == "finfo":
        return float("-inf") if node.attr == "min" else float("inf")  # the dtype's extremes: -finfo.max masks
    return None


def keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def fused_scale(call: ast.Call) -> Optional[ast.expr]:
    """A fused attention call's scale: SDPA's ``scale=`` or flash-attn's ``softmax_scale=``; None for the default."""
    return keyword(call, "scale") or keyword(call, "softmax_scale")


def argument(call: ast.Call, position: int, name: str) -> Optional[ast.expr]:
    """The argument given by keyword ``name`` or at ``position``."""
    found = keyword(call, name)
    if found is not None:
        return found
    plain = [a for a in call.args if not isinstance(a, ast.Starred)]
    if len(plain) != len(call.args):
        return None
    return plain[position] if position < len(plain) else None


def word_first(words: Iterable[str], tail: str = "") -> str:
    r"""The regex ``\b(?:w1|w2|...)<tail>`` spelled word first, ``w1(?<!\ww1)<tail>|...``: it matches the same text,
    but ``re`` skips ahead to the words, where a leading ``\b`` makes it try every position of the text."""
    return "|".join(rf"{w}(?<!\w{w}){tail}" for w in map(re.escape, words))


def chain_root(node: ast.expr) -> Optional[str]:
    """The name a chain of methods, attributes and subscripts starts from: ``s`` for ``s``,
    ``s.transpose(-1, -2).contiguous()``, ``s[0]``, ``v.transpose(1, 2)[..., :d]``; None for anything else."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None


def bound_names(targets: Iterable[ast.expr]) -> Iterator[str]:
    """The names assignment targets bind, in order (``a, (b, c) = ...`` -> a, b, c; ``x[i] = ...`` -> x, i)."""
    for t in targets:
        if isinstance(t, ast.Name):
            yield t.id
        else:
            yield from (n.id for n in subtree(t) if isinstance(n, ast.Name))


def shape_owner(node: ast.expr) -> Optional[str]:
    """``x`` of ``x.size()``, ``x.shape``, ``tuple(x.shape)``, ``list(x.size())``."""
    if isinstance(node, ast.Call) and dotted(node.func) in ("tuple", "list") and len(node.args) == 1:
        node = node.args[0]
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        node = node.func
        if not (isinstance(node, ast.Attribute) and node.attr == "size"):
            return None
    elif not (isinstance(node, ast.Attribute) and node.attr == "shape"):
        return None
    return node.value.id if isinstance(node.value, ast.Name) else None
