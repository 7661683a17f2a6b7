"""Mask polarity as data: whether a mask's True (or 1) entries are the positions that may attend ("keep") or
the positions to mask out ("masked"), followed from where the mask comes from.

Sources, most specific first: a project's declaration (``[tool.shapecheck] mask-conventions``), the function's
docstring for that parameter, a public API's name (Hugging Face ``attention_mask``: 1 = attend; torch's
``key_padding_mask``: True = padding), a builder in the same function (``tril`` keeps the past, ``triu`` above
the diagonal masks the future). Through ``~m``, ``m.logical_not()``, ``m == 0``, ``1 - m`` the polarity flips;
through ``.bool()``, views, indexing and einops it stays; ``a & b`` and ``a | b`` of one polarity keep it.
Anything else is unknown, and the rules that read polarity stay silent.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from shapecheck.lint import names as nm
from shapecheck.lint import file_calls
from shapecheck.lint.scope import FunctionInfo, Scope, all_args
from shapecheck.vocabulary import KEEP_MASK_NAMES, PADDING_ID, PADDING_MASK_NAMES
from shapecheck.lint.nodes import of_type, subtree, walk

KEEP, MASKED = "keep", "masked"
HF_NAME, MHA_NAME = "Hugging Face convention", "nn.MultiheadAttention convention"
CONVENTIONS = (KEEP, MASKED)  # the values [tool.shapecheck] mask-conventions may give

_SAME = frozenset({"bool", "to", "unsqueeze", "view", "reshape", "expand", "expand_as", "type", "long", "int",
                   "float", "byte", "half", "repeat", "contiguous", "detach", "clone", "transpose", "permute",
                   "squeeze", "flatten", "type_as", "cuda"})
_VIEWS = frozenset({"unsqueeze", "view", "reshape", "expand", "expand_as", "repeat", "contiguous", "detach", "clone",
                    "transpose", "permute", "squeeze", "flatten", "cuda"})  # the same entries, the same dtype
_EINOPS = frozenset({"rearrange", "repeat"})
_SAME_FUNCTIONS = _EINOPS | {"pad"}  # ``F.pad(mask, (1, 0), value=True)``: new entries, the old ones unchanged
_TRUE = re.compile(r"\btrue\b|`1`|\bnon-?zero\b|(?<![\w.])1\s*(?:for\b|=|:|means\b|indicates\b|marks\b|->)")
_FALSE = re.compile(r"\bfalse\b|`0`|(?<![\w.])0\s*(?:for\b|=|:|means\b|indicates\b|marks\b|->)")
_CLAUSE = re.compile(r"[.;,]|\bwhile\b|(?=(?<![\w.])[01]\s*(?:for\b|=|:|means\b|indicates\b|marks\b|->))")
# "1 for real tokens 0 for padding": a clause each
_NOT_PADDING = re.compile(r"\bnon-?(?:pad(?:ding|ded)?|masked)\b")  # "non-pad tokens": the ones kept
_MASKED_WORDS = re.compile(r"mask(?:ed)? out|\bmasked\b|padd(?:ed|ing)|\bpad\b|unnecessary|ignored?|not (?:be )?"
                           r"attend|excluded|invalid|disallowed|not allowed|prevent")
_KEEP_WORDS = re.compile(r"\battend|\bkeep|\bkept|\bvalid\b|visible|\ballowed|not masked|real tokens?")


@dataclass(frozen=True)
class Polarity:
    keep: bool  # True/1 entries may attend
    name: str  # the mask as written where its convention comes from
    source: str  # where the convention comes from, for messages
    own: Optional[bool] = None  # the named mask's own polarity, before any negation (None: same as keep)
    by_name: bool = False  # the convention goes back to a parameter's name alone (HF_NAME, MHA_NAME), however built

    def flipped(self) -> "Polarity":
        return Polarity(not self.keep, self.name, self.source, self.own_keep, self.by_name)

    @property
    def own_keep(self) -> bool:
        return self.keep if self.own is None else self.own

    @property
    def own_text(self) -> str:
        """The named mask's convention, e.g. ``1 = attend (Hugging Face convention)``."""
        masked = "True = padding" if self.source == MHA_NAME else "True = masked"
        return f"{'1 = attend' if self.own_keep else masked} ({self.source})"


@dataclass(frozen=True)
class Combination:
    """``a & b`` of two masks that are True where masked: True only where both mask, so it masks too little."""

    node: ast.BinOp
    left: Polarity
    right: Polarity


def polarity(scope: Scope, node: ast.expr, found: Optional[list[Combination]] = None,
             depth: int = 0) -> Optional[Polarity]:
    """The polarity of mask expression ``node`` in the current function, or None when unknown.
    ``found`` collects intersections of two masking masks met on the way."""
    if depth > 12:
        return None
    again = lambda sub: polarity(scope, sub, found, depth + 1)  # noqa: E731
    if isinstance(node, ast.Name):
        return _name(scope, node.id, found, depth, getattr(node, "lineno", 0))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
        inner = again(node.operand)
        return inner.flipped() if inner else None
    if isinstance(node, ast.Subscript):
        return again(node.value)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        causal = _positions(node)
        if causal is not None:
            return causal
        padding = _padding_compare(node)
        if padding is not None:
            return padding
        flip = _compare_flips(node.ops[0], node.comparators[0])
        inner = None if flip is None else again(node.left)
        return None if inner is None else (inner.flipped() if flip else inner)
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) and node.left.value == 1:
            inner = again(node.right)
            return inner.flipped() if inner else None
        if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.Mult)):
            left, right = again(node.left), again(node.right)
            if left is None or right is None or left.keep != right.keep:
                return None
            if isinstance(node.op, ast.BitAnd) and not left.keep and found is not None:
                found.append(Combination(node, left, right))
            return Polarity(left.keep, f"{left.name} & {right.name}", left.source,  # a new mask: its own
                            by_name=left.by_name or right.by_name)
        return None
    if isinstance(node, ast.Call):
        return _call(scope, node, found, depth)
    return None


def _call(scope: Scope, node: ast.Call, found: Optional[list[Combination]], depth: int) -> Optional[Polarity]:
    again = lambda sub: polarity(scope, sub, found, depth + 1)  # noqa: E731
    dotted = nm.dotted(node.func) or ""
    last = dotted.split(".")[-1] if dotted else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
    method = isinstance(node.func, ast.Attribute) and not nm.is_namespace(node.func.value)
    receiver = node.func.value if method else (node.args[0] if node.args else None)  # type: ignore[union-attr]
    if last == "cat" and not method and node.args and isinstance(node.args[0], (ast.Tuple, ast.List)):
        return _joined(scope, node, [again(part) for part in node.args[0].elts])
    if last in ("triu", "triu_", "tril", "tril_"):
        diagonal = _diagonal(node, method)
        name = ast.unparse(node)
        if last.startswith("triu") and diagonal is not None and diagonal != "unknown" and diagonal >= 1 \
                or last.startswith("triu") and diagonal == "unknown":
            return Polarity(False, name, "an upper triangle above the diagonal, triu: the future")
        if last.startswith("tril") and (diagonal is None or diagonal != "unknown" and diagonal >= 0):
            return Polarity(True, name, "a lower triangle, tril: the past")
        return None
    if receiver is None:
        return None
    if last == "logical_not":
        inner = again(receiver)
        return inner.flipped() if inner else None
    if last in ("eq", "ne") and method and len(node.args) == 1 and _is_padding_id(node.args[0]):
        return _padding(last == "ne", ast.unparse(node))
    if last in ("eq", "ne") and method and len(node.args) == 1:
        flip = _compare_flips(ast.Eq() if last == "eq" else ast.NotEq(), node.args[0])
        inner = None if flip is None else again(receiver)
        return None if inner is None else (inner.flipped() if flip else inner)
    if last in _SAME and method or last in _SAME_FUNCTIONS and not method:
        return again(receiver)
    return None


def _joined(scope: Scope, node: ast.Call, parts: list[Optional[Polarity]]) -> Optional[Polarity]:
    """``torch.cat`` of masks along an axis: each part keeps its own convention, so the whole has the one its
    known parts agree on (a part of unknown convention does not change what the others mean)."""
    known = [p for p in parts if p is not None]
    if not known or any(p.keep != known[0].keep for p in known):
        return None
    part = known[0]
    return Polarity(part.keep, part.name, part.source, part.own, any(p.by_name for p in known))


_QUERY_SIDE = re.compile(r"(^|_)(q|query|queries|row|rows|i)(_|$)|^q[A-Z_]|^(q|query)_?(pos|idx|index|indices|ids|seq)",
                         re.I)
_KEY_SIDE = re.compile(r"(^|_)(k|key|keys|kv|col|cols|j)(_|$)|^k[A-Z_]|^(k|key|kv)_?(pos|idx|index|indices|ids|seq)",
                       re.I)


def _side(node: ast.expr) -> Optional[str]:
    """Whether a position tensor indexes the queries ("q") or the keys ("k"): by its layout where it is an
    ``arange`` laid on a row (``[:, None]``) or a column (``[None, :]``), else by its name."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
        first, second = node.slice.elts
        none = lambda e: isinstance(e, ast.Constant) and e.value is None  # noqa: E731
        full = lambda e: isinstance(e, ast.Slice) and e.lower is None and e.upper is None  # noqa: E731
        if full(first) and none(second):
            return "q"
        if none(first) and full(second):
            return "k"
    name = nm.dotted(node.value if isinstance(node, ast.Subscript) else node)
    if not name:
        return None
    last = name.split(".")[-1]
    query, key = bool(_QUERY_SIDE.search(last)), bool(_KEY_SIDE.search(last))
    return "q" if query and not key else "k" if key and not query else None


def _positions(node: ast.Compare) -> Optional[Polarity]:
    """A causal mask built by comparing query and key positions: ``q_pos >= k_pos`` is True on the past (keep),
    ``k_pos > q_pos`` on the future (masked). None unless one side is the queries' and the other the keys'."""
    left, right, op = node.left, node.comparators[0], node.ops[0]
    if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
        return None
    sides = (_side(left), _side(right))
    if sides not in (("q", "k"), ("k", "q")):
        return None
    query_larger = isinstance(op, (ast.Gt, ast.GtE)) == (sides[0] == "q")
    text = ast.unparse(node)
    if query_larger:
        return Polarity(True, text, "a query position at or after the key's: the past")
    return Polarity(False, text, "a key position after the query's: the future")


def _diagonal(node: ast.Call, method: bool):
    """The ``diagonal`` of a triu/tril call: an int, None when absent, "unknown" when not a literal."""
    arg = next((kw.value for kw in node.keywords if kw.arg == "diagonal"), None)
    if arg is None:
        positional = node.args[0:1] if method else node.args[1:2]
        arg = positional[0] if positional else None
    if arg is None:
        return None
    if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
        return arg.value
    if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) and isinstance(arg.operand, ast.Constant):
        return -arg.operand.value
    return "unknown"


def _name(scope: Scope, name: str, found: Optional[list[Combination]], depth: int,
          line: int = 0) -> Optional[Polarity]:
    func = scope.func
    if func is None:
        return None
    if scope.is_untouched_param(name) or rebound_to_itself(scope, func.node, name):
        passed = _from_callers(scope, name, depth)
        if passed is not None:
            return passed
        if name in passed_under_another_name(scope):
            return None
        declared = scope.memo.get("mask_conventions") or {}
        if name in declared:  # type: ignore[operator]
            return Polarity(declared[name] == KEEP, name, "declared in [tool.shapecheck]")  # type: ignore[index]
        documented = _documented(func.node, name)
        if documented is not None:
            return Polarity(documented, name, "its docstring")
        defaulted = file_default(scope, name)
        if defaulted is not None:
            return defaulted
        if name in KEEP_MASK_NAMES:
            return Polarity(True, name, HF_NAME, by_name=True)
        if name in PADDING_MASK_NAMES:
            return Polarity(False, name, MHA_NAME, by_name=True)
        return None
    if name in func.params and _defaults_only(scope, func.node, name):
        defaulted = file_default(scope, name)  # ``if m is None: m = torch.ones(...)``: the caller's mask otherwise
        if defaulted is not None:
            return defaulted
    count, value = stores(scope, func.node).get(name, (0, None))
    if count != 1:
        value = last_store(scope, func.node, name, line) if count > 1 and line else None
    if value is None:
        return None
    inner = polarity(scope, value, found, depth + 1)
    if inner is None:
        return None
    if isinstance(value, ast.Name):  # an alias: the mask it names tells where the convention comes from
        return Polarity(inner.keep, name, inner.source, by_name=inner.by_name)
    return Polarity(inner.keep, name, f"built as {_short(value)}", by_name=inner.by_name)  # the local is a new mask


def _short(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


_ALL_ONES = frozenset({"ones", "ones_like", "new_ones"})
_ALL_ZEROS = frozenset({"zeros", "zeros_like", "new_zeros"})


def _constant_mask(value: ast.expr) -> Optional[bool]:
    """Whether ``value`` builds a mask that is all True/1 (``torch.ones(b, s, dtype=torch.bool)``,
    ``torch.full(shape, True)``), all False/0 (``zeros``), or neither (None)."""
    if not isinstance(value, ast.Call):
        return None
    last = (nm.dotted(value.func) or (value.func.attr if isinstance(value.func, ast.Attribute) else "")).split(".")[-1]
    if last in _ALL_ONES:
        return True
    if last in _ALL_ZEROS:
        return False
    if last in ("full", "new_full", "full_like") and len(value.args) >= 2:
        fill = value.args[1]
        if isinstance(fill, ast.Constant) and fill.value in (True, False, 0, 1) and not isinstance(fill.value, float):
            return bool(fill.value)
    return None


def file_default(scope: Scope, name: str) -> Optional[Polarity]:
    """The file's own convention for a mask name, decided by the default it builds for it: a mask that stands
    for "nothing is masked" is all True where True = keep (``key_padding_mask = torch.ones(b, s, dtype=bool)``)
    and all False where True = masked. None when the file builds none, or defaults that disagree."""
    key = f"mask_default:{name}"
    if key not in scope.memo:
        found = _file_defaults(scope).get(name, set())
        kinds = {k for k, _ in found}
        if len(kinds) == 1:
            keep, line = min(found, key=lambda f: f[1])
            text = "all True" if keep else "all False"
            scope.memo[key] = Polarity(keep, name, f"this file's default for it, {text} on line {line}")
        else:
            scope.memo[key] = None
    return scope.memo[key]  # type: ignore[return-value]


def _file_defaults(scope: Scope) -> dict[str, set[tuple[bool, int]]]:
    """Every ``if name is None: name = <all True or all False>`` of the module: name -> {(all True, line)}."""
    if "mask_defaults" not in scope.memo:
        found: dict[str, set[tuple[bool, int]]] = {}
        for branch in walk(scope.tree):
            if not (isinstance(branch, ast.If) and isinstance(branch.test, ast.Compare)
                    and isinstance(branch.test.left, ast.Name) and _is_none_test(branch.test, branch.test.left.id)):
                continue
            name = branch.test.left.id
            for node in branch.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                        and node.targets[0].id == name:
                    kind = _constant_mask(node.value)
                    if kind is not None:
                        found.setdefault(name, set()).add((kind, node.lineno))
        scope.memo["mask_defaults"] = found
    return scope.memo["mask_defaults"]  # type: ignore[return-value]


def _is_none_test(test: ast.expr, name: str) -> bool:
    """``name is None``: the test of a default."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == name \
        and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _defaults_only(scope: Scope, func: ast.AST, name: str) -> bool:
    """Every store of parameter ``name`` in ``func`` is an all-True or all-False default (``if m is None: m =
    torch.ones(...)``): the name holds the caller's mask or the default of the same convention."""
    count, value = stores(scope, func).get(name, (0, None))
    if count != 1 or value is None or _constant_mask(value) is None:
        return False  # the common case, decided without a walk: one default, all True or all False
    key = f"defaults_in:{id(func)}:{name}"
    if key not in scope.memo:
        scope.memo[key] = sum(1 for b in walk(func) if isinstance(b, ast.If) and _is_none_test(b.test, name)
                              for n in b.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                              and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name
                              and _constant_mask(n.value) is not None)
    return count > 0 and count == scope.memo[key]


def last_store(scope: Scope, func: ast.AST, name: str, line: int) -> Optional[ast.expr]:
    """The value ``name`` holds at ``line`` where every store of it is a plain assignment among the function's
    own statements (no branch, loop or other binding): the last one above that line."""
    key = f"mask_chain:{id(func)}:{name}"
    if key not in scope.memo:
        top = {id(s) for s in getattr(func, "body", [])}
        chain: list[ast.Assign] = []
        for node in walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == name and id(node) in top:
                chain.append(node)
        stored = sum(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name for n in walk(func))
        scope.memo[key] = sorted(chain, key=lambda a: a.lineno) if len(chain) == stored else None
    chain = scope.memo[key]
    before = [a for a in chain or [] if (a.end_lineno or a.lineno) < line]  # type: ignore[union-attr]
    return before[-1].value if before else None


def stores(scope: Scope, func: ast.AST) -> dict[str, tuple[int, Optional[ast.expr]]]:
    """Each name stored in ``func``: how many times, and its value when it is one plain assignment."""
    key = f"mask_stores:{id(func)}"
    if key not in scope.memo:
        counts = Counter(n.id for n in of_type(func, ast.Name) if isinstance(n.ctx, ast.Store))
        values: dict[str, Optional[ast.expr]] = {}
        for node in of_type(func, ast.Assign):
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                counts.subtract(t.id for t in node.targets if isinstance(t, ast.Name))  # no mask: not a convention
            elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values[node.targets[0].id] = node.value
        scope.memo[key] = {n: (c, values.get(n)) for n, c in counts.items()}
    return scope.memo[key]  # type: ignore[return-value]


def _documented(func: ast.AST, name: str) -> Optional[bool]:
    """What the function's docstring says the parameter's True entries are: True (attend), False (masked)."""
    doc = ast.get_docstring(func) if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if not doc or name not in doc:
        return None
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s*{re.escape(name)}\b\s*(\(|:|--)", line):
            indent = len(line) - len(line.lstrip())
            paragraph = [line.split(name, 1)[1]]
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                paragraph.append(nxt)
            text = _NOT_PADDING.sub("real", " ".join(paragraph).lower())
            for clause in _CLAUSE.split(text):
                ones = bool(_TRUE.search(clause))  # what the clause says of the True/1 entries, or the False/0 ones
                if not ones and not _FALSE.search(clause):
                    continue
                if _MASKED_WORDS.search(clause) and "not masked" not in clause:
                    return not ones
                if _KEEP_WORDS.search(clause):
                    return ones
            return None
    return None


def passed_under_another_name(scope: Scope) -> frozenset[str]:
    """Mask names this module passes another value under (``attention_mask=causal_mask``,
    ``{'key_padding_mask': attention_mask}``, ``kwargs['key_padding_mask'] = m``): there the name does not tell
    the convention, the caller's value does."""
    if "passed_masks" not in scope.memo:
        known = KEEP_MASK_NAMES | PADDING_MASK_NAMES
        found = set()

        def other(name: str, value: ast.expr) -> bool:
            return not (isinstance(value, ast.Name) and value.id == name)

        params = _forward_params(scope.tree)
        for node in walk(scope.tree):
            if isinstance(node, ast.Call):
                found |= {kw.arg for kw in node.keywords if kw.arg in known and other(kw.arg, kw.value)}
                for param, arg in zip(params.get(nm.self_attr(node.func) or "", ()), node.args):
                    if param in known and other(param, arg):  # self.encoder(x, extended_mask): a call into a class
                        found.add(param)
            elif isinstance(node, ast.Dict):
                found |= {k.value for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)
                          and k.value in known and other(k.value, v)}
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                            and target.slice.value in known:
                        found.add(target.slice.value)
        scope.memo["passed_masks"] = frozenset(found)
    return scope.memo["passed_masks"]  # type: ignore[return-value]


def _forward_params(tree: ast.Module) -> dict[str, list[str]]:
    """``self.attr`` -> the parameters of ``forward`` of the class of this file it was built from
    (``self.encoder = Encoder(config)``, ``nn.ModuleList([Layer(config) ...])``)."""
    forwards = {}
    for cls in walk(tree):
        if isinstance(cls, ast.ClassDef):
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "forward":
                    forwards[cls.name] = [a.arg for a in item.args.args[1:]]
    found: dict[str, list[str]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            attr = nm.self_attr(node.targets[0])
            made = next((forwards[c.func.id] for c in subtree(node.value) if isinstance(c, ast.Call)
                         and isinstance(c.func, ast.Name) and c.func.id in forwards), None)
            if attr is not None and made is not None:
                found[attr] = made
    return found


@dataclass(frozen=True)
class Root:
    """The mask a mask expression reads: ``name`` (a local, a parameter or ``self.x``), whether the way there
    negates it (``~m``, ``m == 0``, ``1 - m``, ``logical_not``), and whether that way is ``plain``: views and ``~``
    alone, so the expression holds the root's own entries (no comparison or cast that makes a new dtype)."""

    name: str
    negated: bool
    plain: bool


def root(node: ast.expr) -> Optional[Root]:
    """The mask ``node`` reads, through views, indexing, negations and comparisons with a constant; None for
    anything else (a combination of two masks, a call that builds one)."""
    negated, plain = False, True
    while True:
        if isinstance(node, ast.Name) or nm.self_attr(node) is not None:
            return Root(ast.unparse(node), negated, plain)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            node, negated, plain = node.operand, not negated, plain and isinstance(node.op, ast.Invert)
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            flip = _compare_flips(node.ops[0], node.comparators[0])
            if flip is None:
                return None
            node, negated, plain = node.left, negated != flip, False
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) \
                and node.left.value == 1:
            node, negated, plain = node.right, not negated, False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and not nm.is_namespace(node.func.value):
            last = node.func.attr
            if last == "logical_not" and not node.args:
                node, negated, plain = node.func.value, not negated, False
            elif last in _VIEWS:
                node = node.func.value
            elif last in _SAME:
                node, plain = node.func.value, False
            else:
                return None
        elif isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] == "logical_not" \
                and len(node.args) == 1:
            node, negated, plain = node.args[0], not negated, False
        elif isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] in _EINOPS and node.args:
            node = node.args[0]
        else:
            return None


def stored_between(func: ast.AST, name: str, first: int, last: int) -> bool:
    """Whether ``name`` (a local or ``self.x``) may be stored in ``func`` after a read on line ``first`` and before
    one on line ``last``: by a statement that ends on ``first`` or later and starts on ``last`` or earlier (an
    assignment spans its lines: its value is read before its target is stored)."""
    for node in walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets, end = getattr(node, "targets", None) or [node.target], node.end_lineno or node.lineno
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets, end = [node.target], node.lineno
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets, end = [i.optional_vars for i in node.items if i.optional_vars is not None], node.lineno
        else:
            continue
        if end >= first and node.lineno <= last and any(
                isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Store) and ast.unparse(n) == name
                for target in targets for n in walk(target)):
            return True
    return False


def _compare_flips(op: ast.cmpop, other: ast.expr) -> Optional[bool]:
    """Whether ``mask OP other`` selects the mask's zeros (True) or its ones (False)."""
    value = other.value if isinstance(other, ast.Constant) else None
    if value is None or isinstance(value, str):
        return None
    if isinstance(op, ast.Eq):
        return not value
    if isinstance(op, ast.NotEq):
        return bool(value)
    if isinstance(op, ast.Gt) and value == 0:
        return False
    if isinstance(op, ast.Lt) and value == 1:
        return True
    return None


def _is_padding_id(node: ast.expr) -> bool:
    name = nm.dotted(node)
    return name is not None and PADDING_ID.match(name.split(".")[-1]) is not None


def _padding(keep: bool, text: str) -> Polarity:
    return Polarity(keep, text, "a comparison with the padding id: " + ("the tokens" if keep else "the padding"))


def _padding_compare(node: ast.Compare) -> Optional[Polarity]:
    """``ids == pad_id`` is True at the padding (masked), ``ids != pad_id`` at the tokens (keep)."""
    op = node.ops[0]
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    if not (_is_padding_id(node.comparators[0]) or _is_padding_id(node.left)):
        return None
    return _padding(isinstance(op, ast.NotEq), ast.unparse(node))


def rebound_to_itself(scope: Scope, func: ast.AST, name: str) -> bool:
    """Parameter ``name`` is only ever rebound to a reshaped or padded copy of itself (``mask = rearrange(mask,
    'b j -> b 1 1 j')``, ``mask = F.pad(mask, (1, 0), value=True)``): it keeps the caller's convention."""
    f = scope.func
    if f is None or name not in f.params:
        return False
    key = f"rebound_to_itself:{id(func)}:{name}"
    if key not in scope.memo:
        stores = [n for n in of_type(func, ast.Name) if isinstance(n.ctx, ast.Store) and n.id == name]
        copies = [a for a in of_type(func, ast.Assign) if len(a.targets) == 1 and isinstance(a.targets[0], ast.Name)
                  and a.targets[0].id == name and _copy_of(a.value, name)]
        scope.memo[key] = bool(stores) and len(stores) == len(copies)
    return scope.memo[key]  # type: ignore[return-value]


def _copy_of(value: ast.expr, name: str) -> bool:
    if not isinstance(value, ast.Call):
        return False
    method = isinstance(value.func, ast.Attribute) and not nm.is_namespace(value.func.value)
    last = value.func.attr if isinstance(value.func, ast.Attribute) else (nm.dotted(value.func) or "")
    inner = value.func.value if method else (value.args[0] if value.args else None)  # type: ignore[union-attr]
    if last not in (_SAME if method else _SAME_FUNCTIONS):
        return False
    return _copy_of(inner, name) if isinstance(inner, ast.Call) else isinstance(inner, ast.Name) and inner.id == name


_PASSED = "as passed by"


def _from_callers(scope: Scope, name: str, depth: int) -> Optional[Polarity]:
    """The convention of ``forward``'s parameter ``name`` from what the file's callers pass for it, where every
    one of them is known and they agree (a call that passes nothing or ``None`` gives no mask)."""
    func = scope.func
    if func is None or func.method_of is None or func.node.name != "forward" or depth > 8:
        return None
    passed = file_calls.callers(scope, func.method_of.name, name)
    active = scope.memo.setdefault("callers_active", set())
    key = (func.method_of.name, name)
    if not passed or key in active:
        return None
    active.add(key)  # type: ignore[union-attr]
    try:
        found = [(caller, _in_caller(scope, caller, depth)) for caller in passed
                 if not (isinstance(caller.value, ast.Constant) and caller.value.value is None)]
    finally:
        active.discard(key)  # type: ignore[union-attr]
    if not found or any(p is None for _, p in found) or len({p.keep for _, p in found}) != 1:  # type: ignore[union-attr]
        return None
    caller, first = found[0]
    where = f"{caller.owner.name}.{caller.method.name}, line {caller.call.lineno}"
    if first.source.startswith(_PASSED):  # type: ignore[union-attr]
        source = first.source  # type: ignore[union-attr]  # the caller passes on its own caller's mask
    elif isinstance(caller.value, ast.Name):
        source = f"{_PASSED} {where}: {first.source}"  # type: ignore[union-attr]
    else:
        source = f"{_PASSED} {where} as {_short(caller.value)}"

    return Polarity(first.keep, name, source,  # type: ignore[union-attr]
                    by_name=any(p.by_name for _, p in found))  # type: ignore[union-attr]


def _in_caller(scope: Scope, caller: file_calls.Caller, depth: int) -> Optional[Polarity]:
    """The polarity of what ``caller`` passes, read in the calling method."""
    info_key = f"caller_function:{id(caller.method)}"
    if info_key not in scope.memo:
        scope.memo[info_key] = FunctionInfo(caller.method, scope.class_info_of(caller.owner),
                                            frozenset(a.arg for a in all_args(caller.method.args)))
    saved = scope.func
    scope.func = scope.memo[info_key]  # type: ignore[assignment]
    try:
        return polarity(scope, caller.value, None, depth + 1)
    finally:
        scope.func = saved
