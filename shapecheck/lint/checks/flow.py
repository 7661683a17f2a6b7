"""Rules decided by where a value flows: a rotary embedding given the values (SC136), an argument the caller
gives that is read only where it is None (SC137), an ``if`` whose two branches do the same (SC138), unfolded
patches split with the kernel positions outermost (SC139), a square bias or mask built from one length of the
scores it is applied to (SC140).

Each whole-body check runs once per function, only where the function calls what the rule is about
(``scope.callees``) or where an ``if`` of the function tested what it needs (``Branches``).
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional, Union

from shapecheck.vocabulary import forward_role, pick
from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import subtree, walk
from shapecheck.lint.checks.cache import _ROTARY, _applies_rotary, _callee_name, _once_where_called
from shapecheck.lint.scope import Scope, _statements
from shapecheck.lint.tracking import Tensor

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# ---------------------------------------------------------------- SC136: rotary on the values

# Keywords that hand a rotary call the values (``flash_rotary(q=..., k=..., v=...)``).
_VALUE_KEYWORDS = frozenset({"v", "value", "values", "value_states", "xv", "v_states", "value_layer"})
# Submodules whose output is the values: the value projection (``self.v_proj(x)``, ``self.wv(x)``, ``self.to_v(x)``).
_VALUE_PROJECTION = re.compile(r"^(v|wv|w_v|to_v|v_proj|value|value_proj|proj_v|v_linear|linear_v)$", re.I)
_VALUE_NAME = re.compile(r"^(v|xv|vs|values?|value_states|value_layer)$")
_SPLITS = frozenset({"chunk", "split", "unbind", "tensor_split", "unflatten"})


def _values(func: Function) -> set[str]:
    """Names of the function that hold the values, by where they come from or where they go: a parameter in the
    value role, a value projection's output, the part of a qkv (or kv) split named as the values, what a softmax
    output is multiplied with, the value argument of a fused attention call (not also its query or key)."""
    args = func.args
    found = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs] if forward_role(a.arg) == "value"}
    probs: set[str] = set()
    products: list[tuple[ast.expr, ast.expr]] = []
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
            pairs = zip(node.targets[0].elts, node.value.elts)  # ``xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)``
            found |= {t.id for t, v in pairs if isinstance(t, ast.Name) and isinstance(v, ast.Call)
                      and _VALUE_PROJECTION.match(nm.self_attr(v.func) or "")}
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call, targets = node.value, node.targets[0] if len(node.targets) == 1 else None
            attr = nm.self_attr(call.func)
            if attr is not None and _VALUE_PROJECTION.match(attr) and isinstance(targets, ast.Name):
                found.add(targets.id)
            name = _callee_name(call)
            if name in nm.SOFTMAX:
                probs.update(nm.bound_names(node.targets))
            if name in _SPLITS and isinstance(targets, ast.Tuple) and "kv" in ast.unparse(call.func).lower():
                # ``q, k, v = qkv.chunk(3, dim=-1)``; the order is the project's (CodeGen splits query, value, key)
                found |= {e.id for e in targets.elts if isinstance(e, ast.Name) and _VALUE_NAME.match(e.id)}
        elif isinstance(node, ast.Call):
            name = _callee_name(node)
            if name in nm.FUSED_ATTENTION:
                given = nm.argument(node, 2, "value")
                attending = [nm.argument(node, 0, "query"), nm.argument(node, 1, "key")]
                if isinstance(given, ast.Name) and not any(isinstance(a, ast.Name) and a.id == given.id
                                                           for a in attending):
                    found.add(given.id)  # not ``sdpa(q, q, q)``: what is also the queries is rotated for them
            elif name in nm.PRODUCTS and len(node.args) >= 2:
                operands = nm.product_operands(node)
                products += [(a, b) for a, b in zip(operands, operands[1:])]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            products.append((node.left, node.right))
    for left, right in products:
        left_name, right_name = nm.chain_root(left), nm.chain_root(right)
        if left_name in probs and right_name is not None:
            found.add(right_name)
    return found


def _rotated(call: ast.Call) -> Iterator[tuple[ast.expr, bool]]:
    """What a rotary call (or ``map(lambda t: rotary(t, ...), (q, k, v))``) rotates: each argument, and whether it
    was handed over by a keyword that names the values."""
    if _applies_rotary(call):
        for arg in call.args:
            yield arg, False
        for kw in call.keywords:
            if kw.arg is not None:
                yield kw.value, kw.arg in _VALUE_KEYWORDS
    elif _callee_name(call) == "map" and len(call.args) == 2 and isinstance(call.args[0], ast.Lambda) \
            and isinstance(call.args[1], (ast.Tuple, ast.List)):
        body = call.args[0].body
        if any(isinstance(sub, ast.Call) and _applies_rotary(sub) for sub in ast.walk(body)):
            for item in call.args[1].elts:
                yield item, False


def _chosen_by_flag(func: Function, node: ast.AST) -> bool:
    """Inside an ``if`` whose test speaks of the values (``if self.rotate_value:``): rotating them is an option."""
    for owner in ast.walk(func):
        if isinstance(owner, (ast.If, ast.IfExp)) and any("value" in w.lower() or w in ("v", "rotate_v")
                                                          for w in nm.identifiers(owner.test)):
            if any(sub is node for part in (owner.body if isinstance(owner.body, list) else [owner.body])
                   for sub in ast.walk(part)):
                return True
    return False


def _rotary_on_values(scope: Scope) -> None:
    """``v = apply_rotary(v, ...)``, ``q, k, v = rotary(q=q, k=k, v=v)``: the values stored back rotated."""
    if not _once_where_called(scope, "rotary_on_values", _ROTARY):
        return
    func = scope.func.node  # type: ignore[union-attr]
    values: Optional[set[str]] = None
    for node in _statements(func.body):
        if not isinstance(node, ast.Assign):
            continue
        if isinstance(node.value, ast.Tuple):  # ``q, k, v = rope(q), rope(k), rope(v)``
            calls = [c for c in node.value.elts if isinstance(c, ast.Call)]
        else:
            calls = [node.value] if isinstance(node.value, ast.Call) else []
        rotated = [(g, b, c) for c in calls for g, b in _rotated(c)]
        if not rotated:
            continue
        stored = set(nm.bound_names(node.targets))
        for given, by_keyword, call in rotated:
            if not isinstance(given, ast.Name) or given.id not in stored:
                continue  # ``cos, sin = self.rotary_emb(v, seq_len)``: v only gives the dtype; the tables come back
            if values is None:
                values = _values(func)
            if (by_keyword or given.id in values) and not _chosen_by_flag(func, node):
                shown = nm.dotted(call.func) or _callee_name(call)
                scope.report(msg.RotaryOnValues, given, f"{shown}(...)", given.id)


@on(ev.FunctionDone, reports=("SC136",))
def rotary_on_values(scope: Scope, e: ev.FunctionDone) -> None:
    _rotary_on_values(scope)


# ---------------------------------------------------------------- SC137: given, but read only where it is None

def _none_tested(test: ast.expr) -> list[str]:
    """Names the test requires to be None: ``x is None``, ``not x``, ``not exists(x)``, each also as a part of an
    ``and``."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    found = []
    for part in parts:
        if isinstance(part, ast.Compare) and isinstance(part.left, ast.Name) and len(part.ops) == 1 \
                and isinstance(part.ops[0], (ast.Is, ast.Eq)) and isinstance(part.comparators[0], ast.Constant) \
                and part.comparators[0].value is None:
            found.append(part.left.id)
        elif isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            inner = part.operand
            if isinstance(inner, ast.Call) and _callee_name(inner) in ("exists", "exist") and len(inner.args) == 1:
                inner = inner.args[0]
            if isinstance(inner, ast.Name):
                found.append(inner.id)
    return found


def _given_tested(test: ast.expr) -> Optional[str]:
    """The name a whole test requires to be given: ``x is not None``, ``exists(x)``, ``x``."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1 \
            and isinstance(test.ops[0], (ast.IsNot, ast.NotEq)) and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return test.left.id
    if isinstance(test, ast.Call) and _callee_name(test) in ("exists", "exist") and len(test.args) == 1:
        test = test.args[0]
    return test.id if isinstance(test, ast.Name) else None


@on(ev.Branches)
def note_none_test(scope: Scope, e: ev.Branches) -> None:
    """Remember the branch of each ``if`` of a function where a name is None (``if x is None:``, the else of
    ``if x is not None:``), for ``given_only_when_absent`` when the function is done."""
    if scope.func is None or scope.following:
        return
    found = [(name, e.node.body) for name in _none_tested(e.node.test)]
    given = _given_tested(e.node.test)
    if given is not None and e.node.orelse:
        found.append((given, e.node.orelse))
    if found:
        scope.memo.setdefault(f"none_tests:{id(scope.func.node)}", []).extend(  # type: ignore[union-attr]
            (name, e.node, branch) for name, branch in found)


def _given(func: Function) -> set[str]:
    """Names the caller may give: parameters that default to None, and ``kwargs.pop('name', None)``."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    given = {a.arg for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)
             if isinstance(d, ast.Constant) and d.value is None}
    given |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults)
              if isinstance(d, ast.Constant) and d.value is None}
    if args.kwarg is not None:
        for stmt in func.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
                    and stmt.value.func.attr in ("pop", "get") \
                    and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == args.kwarg.arg:
                given.add(stmt.targets[0].id)
    return given


def _used(nodes: list[ast.AST], name: str) -> list[ast.Name]:
    """Where ``name`` is read under ``nodes`` other than to test it (``x is None``, ``not x``, ``exists(x)``,
    ``if x:``), in one walk."""
    reads: list[ast.Name] = []
    tests: set[int] = set()
    for root in nodes:
        for node in subtree(root):
            if isinstance(node, ast.Name):
                if node.id == name and isinstance(node.ctx, ast.Load):
                    reads.append(node)
            elif isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
                if any(isinstance(p, ast.Constant) and p.value is None for p in parts):
                    tests |= {id(p) for p in parts if isinstance(p, ast.Name)}
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Name):
                tests.add(id(node.operand))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exists", "exist"):
                tests |= {id(a) for a in node.args if isinstance(a, ast.Name)}
            elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                test = node.test
                tests |= {id(p) for p in (test.values if isinstance(test, ast.BoolOp) else [test])
                          if isinstance(p, ast.Name)}
    return [n for n in reads if id(n) not in tests]


def _given_only_when_absent(scope: Scope) -> None:
    func = scope.func
    if func is None or scope.following:
        return
    tests = scope.memo.pop(f"none_tests:{id(func.node)}", None)
    if not tests:
        return
    given = _given(func.node)
    tested: dict[str, list[tuple[ast.If, list[ast.stmt]]]] = {}
    for name, node, branch in tests:  # type: ignore[attr-defined]
        if name in given:
            tested.setdefault(name, []).append((node, branch))
    if not tested:
        return
    for name, branches in tested.items():
        if any(isinstance(s, ast.Raise) for _, branch in branches for s in branch):
            continue  # ``if x is None: raise``: the None case is refused, not defaulted
        branches = [(owner, branch) for owner, branch in branches if _replaces(branch, name)]
        inside = {id(n): owner for owner, branch in branches for n in _used(branch, name)}  # type: ignore[arg-type]
        if not inside:
            continue  # the common case, ``if mask is None: mask = ...`` read after the if: no walk of the body
        skip = {id(s) for _, branch in branches for s in _statements(branch)}
        if not _read_outside(func.node, name, skip):
            first = min((n for _, branch in branches for n in _used(branch, name) if id(n) in inside),
                        key=lambda n: (n.lineno, n.col_offset))
            scope.report(msg.GivenOnlyWhenAbsent, first, name, inside[id(first)].lineno)


def _replaces(branch: list[ast.stmt], name: str) -> bool:
    """Whether the branch stores a default under the name (``mask = torch.ones(...)``), in its own statements."""
    return any(isinstance(s, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == name for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
        for s in branch)


def _read_outside(func: Function, name: str, skip: set[int]) -> bool:
    """Whether a statement of the function other than those in ``skip`` reads ``name`` other than to test it;
    statement by statement, stopping at the first such read."""
    for stmt in _statements(func.body):
        if id(stmt) in skip:
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
                return True  # a closure that reads it
            continue
        own: list[ast.AST] = []
        for _, value in ast.iter_fields(stmt):
            items = value if isinstance(value, list) else [value]
            own += [item.context_expr if isinstance(item, ast.withitem) else item for item in items
                    if isinstance(item, (ast.expr, ast.withitem, ast.keyword))]
        test = getattr(stmt, "test", None)
        bare = {id(p) for p in (test.values if isinstance(test, ast.BoolOp) else [test]) if isinstance(p, ast.Name)} \
            if isinstance(stmt, (ast.If, ast.While, ast.Assert)) and test is not None else set()
        if any(id(n) not in bare for n in _used(own, name)):
            return True
    return False


@on(ev.FunctionDone)
def given_only_when_absent(scope: Scope, e: ev.FunctionDone) -> None:
    _given_only_when_absent(scope)


# ---------------------------------------------------------------- SC138: both branches the same

_DOES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _option(test: ast.expr, params: frozenset[str]) -> bool:
    """Whether a test reads an option: a flag (``config.use_mup``, ``not self.causal``, a parameter of the function),
    a setting compared with a constant (``self.pos_emb == "alibi"``), or several of them; not a local value's truth
    or a check of a value's type or presence, whose branches may have become the same when the types did."""
    if isinstance(test, ast.BoolOp):
        return all(_option(v, params) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _option(test.operand, params)
    if isinstance(test, ast.Compare):
        return _option(test.left, params) and all(isinstance(c, ast.Constant) and c.value is not None
                                                  for c in test.comparators)
    if isinstance(test, ast.Name):
        return test.id in params
    return isinstance(test, ast.Attribute) and _plain(test)


def _plain(node: ast.expr) -> bool:
    """A constant (signed too: ``-10000.0``), a name or an attribute read (``cfg.vocab_size``): the same in both
    branches on purpose, each case spelled out; a computation copied unchanged is what the rule is about."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, (ast.Constant, ast.Name))


def _built_either_way(scope: Scope) -> frozenset[str]:
    """Attributes ``__init__`` assigns under a choice (``if n > 0: self.ff = MoE(...) else: self.ff = FFN(...)``,
    or ``a if c else b``): calling one runs whichever was built, so two branches calling it alike may differ."""
    cls = scope.cls
    init = cls.methods.get("__init__") if cls else None
    if init is None:
        return frozenset()
    key = f"built either way {id(init)}"
    if key not in scope.memo:
        chosen = [n for n in walk(init) if isinstance(n, ast.If)]
        stores = [s for n in chosen for s in walk(n) if isinstance(s, ast.Assign)]
        stores += [n for n in walk(init) if isinstance(n, ast.Assign) and isinstance(n.value, ast.IfExp)]
        scope.memo[key] = frozenset(a for s in stores for t in s.targets if (a := nm.self_attr(t)) is not None)
    return scope.memo[key]  # type: ignore[return-value]


def _calls_built_either_way(scope: Scope, body: list[ast.stmt]) -> bool:
    built = _built_either_way(scope)
    return bool(built) and any(isinstance(n, ast.Call) and nm.self_attr(n.func) in built
                               for s in body for n in walk(s))


@on(ev.Branches, reports=("SC138",))
def same_branches(scope: Scope, e: ev.Branches) -> None:
    """``if flag: x = a else: x = a``: the flag changes nothing (a copy left unchanged)."""
    body, orelse = e.node.body, e.node.orelse
    if orelse and len(orelse) == 1 and isinstance(orelse[0], ast.If):
        scope.memo.setdefault("elif", set()).add(id(orelse[0]))  # type: ignore[union-attr]
        return
    if not orelse or len(body) != len(orelse) or type(body[0]) is not type(orelse[0]) \
            or id(e.node) in scope.memo.get("elif", ()):  # type: ignore[operator]
        return  # the last two arms of an elif chain: each case spelled out, the same on purpose
    doing = [s for s in body if isinstance(s, _DOES) and getattr(s, "value", None) is not None
             and not _plain(s.value)]  # type: ignore[union-attr]
    params = scope.func.params if scope.func else frozenset()
    if doing and _option(e.node.test, params) and all(ast.dump(a) == ast.dump(b) for a, b in zip(body, orelse)) \
            and not _calls_built_either_way(scope, body):
        scope.report(msg.SameBranches, e.node.test, _short(e.node.test), _short(doing[0]))


@on(ev.Choice, reports=("SC138",))
def same_choices(scope: Scope, e: ev.Choice) -> None:
    """``s = d ** -0.5 if mup else d ** -0.5``: the same expression on both sides."""
    body = e.node.body
    params = scope.func.params if scope.func else frozenset()
    if not _plain(body) and _option(e.node.test, params) and ast.dump(body) == ast.dump(e.node.orelse):
        scope.report(msg.SameBranches, e.node.test, _short(e.node.test), _short(body))


# ---------------------------------------------------------------- SC139: unfolded patches split kernel-first

def _unfold_kernel(scope: Scope, call: ast.Call) -> Optional[ast.expr]:
    """The kernel size of ``F.unfold(x, k)`` or of ``self.unfold(x)`` made by ``nn.Unfold(k)``; None for anything
    else (``x.unfold(dim, size, step)`` keeps its windows last)."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "unfold" and nm.is_namespace(func.value) \
            or isinstance(func, ast.Name) and scope.functional.get(func.id) == "unfold":
        return nm.argument(call, 1, "kernel_size")
    attr = nm.self_attr(func)
    made = scope.class_attr(attr) if attr is not None else None
    if isinstance(made, ast.Call) and (nm.dotted(made.func) or "").split(".")[-1] == "Unfold":
        return nm.argument(made, 0, "kernel_size")
    return None


def _const(node: ast.AST) -> Optional[int]:
    """The int a constant expression spells (``3``, ``3 ** 2``, ``3 * 3``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow)):
        a, b = _const(node.left), _const(node.right)
        if a is None or b is None or b > 64:
            return None
        return a * b if isinstance(node.op, ast.Mult) else a ** b
    return nm.int_value(node)


def _is_kernel(size: ast.expr, kernel: ast.expr) -> bool:
    """Whether a size is the kernel's number of positions: it is made of the kernel size's names, or equals its
    area (``j = kernel_size ** 2`` with ``unfold(x, kernel_size)``; ``9`` with ``unfold(x, 3)``)."""
    names = set(nm.identifiers(kernel)) - {"self", "config", "args", "cfg"}
    if names and names & set(nm.identifiers(size)):
        return True
    value = _const(size)
    if value is None:
        return False
    sides = [_const(e) for e in kernel.elts] if isinstance(kernel, (ast.Tuple, ast.List)) else [_const(kernel)] * 2
    return None not in sides and value == sides[0] * sides[1]  # type: ignore[operator]


def _groups(side: str) -> Optional[list[list[str]]]:
    """``'b (j d) i'`` -> [['b'], ['j', 'd'], ['i']]; None for what this does not read (ellipses, nesting)."""
    found: list[list[str]] = []
    inside: Optional[list[str]] = None
    for token in re.findall(r"\(|\)|[^\s()]+", side):
        if token == "(":
            if inside is not None:
                return None
            inside = []
        elif token == ")":
            if inside is None:
                return None
            found.append(inside)
            inside = None
        elif inside is not None:
            inside.append(token)
        else:
            found.append([token])
    return found if inside is None else None


def _kernel_first(scope: Scope, use: ast.Call, kernel: ast.expr) -> Optional[str]:
    """The split of an unfolded (batch, channels·positions, blocks) tensor that puts the kernel positions first:
    ``rearrange(t, 'b (j d) i -> ...', j=k ** 2)`` or ``t.view(b, k * k, c, -1)``; its text, else None."""
    name = _callee_name(use)
    if name == "rearrange" and len(use.args) >= 2 and isinstance(use.args[1], ast.Constant) \
            and isinstance(use.args[1].value, str):
        groups = _groups(use.args[1].value.split("->")[0])
        if groups is None or len(groups) != 3 or len(groups[1]) < 2:
            return None
        sizes = {kw.arg: kw.value for kw in use.keywords if kw.arg is not None}
        marks = [axis in sizes and _is_kernel(sizes[axis], kernel) for axis in groups[1]]
        if any(marks) and not marks[-1]:
            return " ".join(groups[1])
    elif name in ("view", "reshape"):
        sizes = list(use.args[0].elts) if len(use.args) == 1 and isinstance(use.args[0], (ast.Tuple, ast.List)) \
            else list(use.args)
        if len(sizes) == 4 and _is_kernel(sizes[1], kernel) and not _is_kernel(sizes[2], kernel):
            return f"{ast.unparse(sizes[1])}, {ast.unparse(sizes[2])}"
    return None


def _split_call(value: ast.expr, unfolded: set[str]) -> Optional[tuple[ast.Call, str]]:
    """The call that splits an unfolded tensor, and the tensor's name: ``rearrange(u, ...)``, ``u.view(...)``,
    ``map(lambda t: rearrange(t, ...), (u, w))``."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in ("view", "reshape") and isinstance(func.value, ast.Name) \
            and func.value.id in unfolded:
        return value, func.value.id
    if _callee_name(value) == "rearrange" and value.args and isinstance(value.args[0], ast.Name) \
            and value.args[0].id in unfolded:
        return value, value.args[0].id
    if _callee_name(value) == "map" and len(value.args) == 2 and isinstance(value.args[0], ast.Lambda) \
            and isinstance(value.args[1], (ast.Tuple, ast.List)) and isinstance(value.args[0].body, ast.Call):
        items = [e.id for e in value.args[1].elts if isinstance(e, ast.Name) and e.id in unfolded]
        if items:
            return value.args[0].body, items[0]
    return None


def _unfold_names(scope: Scope) -> set[str]:
    """``unfold`` and the class's attributes made by ``nn.Unfold``, computed once per class."""
    cls = scope.cls
    if cls is None:
        return {"unfold"}
    key = f"unfolds:{id(cls)}"
    if key not in scope.memo:
        scope.memo[key] = {"unfold"} | {a for a, made in cls.attrs.items() if isinstance(made, ast.Call)
                                        and (nm.dotted(made.func) or "").endswith("Unfold")}
    return scope.memo[key]  # type: ignore[return-value]


def _unfold_split_order(scope: Scope) -> None:
    func = scope.func
    if func is None or scope.following:
        return
    called = scope.callees.get(id(func.node)) or set()
    if "unfold" not in called and (scope.cls is None or not called & _unfold_names(scope)):
        return
    assigns = sorted((n for n in _statements(func.node.body) if isinstance(n, ast.Assign)), key=lambda n: n.lineno)
    for i, stmt in enumerate(assigns):
        kernel = next((k for c in ast.walk(stmt.value) if isinstance(c, ast.Call)
                       for k in [_unfold_kernel(scope, c)] if k is not None), None)
        if kernel is None:
            continue
        unfolded = set(nm.bound_names(stmt.targets))
        later = next((s for s in assigns[i + 1:] if unfolded & {n.id for n in ast.walk(s.value)
                                                                if isinstance(n, ast.Name)}), None)
        found = _split_call(later.value, unfolded) if later is not None else None
        if found is not None:
            split = _kernel_first(scope, found[0], kernel)
            if split is not None:
                scope.report(msg.UnfoldSplitOrder, found[0], f"{_callee_name(found[0])}(...)", found[1], split)


@on(ev.FunctionDone)
def unfold_split_order(scope: Scope, e: ev.FunctionDone) -> None:
    _unfold_split_order(scope)


# ---------------------------------------------------------------- SC140: square from one length

_SIZED = frozenset({"arange", "ones", "zeros", "full", "empty", "rand", "randn", "view", "reshape", "repeat", "expand",
                    "new_ones", "new_zeros", "new_full", "new_empty", "tril", "triu", "eye"})

# What a function calls before it can build a square from a length: a builder, or ``size`` to slice a buffer with.
_BUILDS = frozenset({"arange", "ones", "zeros", "full", "empty", "tril", "triu", "eye", "new_ones", "new_zeros",
                     "new_full", "size"})


def _axis_read(value: ast.expr) -> Optional[tuple[str, int]]:
    """``x.shape[-1]``, ``x.size(-2)``, ``x.size()[-1]``: (the name of x, the axis), for the last two axes."""
    if isinstance(value, ast.Subscript) and nm.int_value(value.slice) in (-1, -2):
        inner, axis = value.value, nm.int_value(value.slice)
        if isinstance(inner, ast.Attribute) and inner.attr == "shape" and isinstance(inner.value, ast.Name):
            return inner.value.id, axis  # type: ignore[return-value]
        if isinstance(inner, ast.Call) and not inner.args and isinstance(inner.func, ast.Attribute) \
                and inner.func.attr == "size" and isinstance(inner.func.value, ast.Name):
            return inner.func.value.id, axis  # type: ignore[return-value]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
            and len(value.args) == 1 and nm.int_value(value.args[0]) in (-1, -2) \
            and isinstance(value.func.value, ast.Name):
        return value.func.value.id, nm.int_value(value.args[0])  # type: ignore[return-value]
    return None


def _square_in(value: ast.expr, length: str) -> bool:
    """Whether ``length`` sizes two axes of what the expression builds: it is given to sizing calls twice
    (``ones(n, n)``, ``arange(n).view(n, 1)``) or twice to one call (``self.bias(n, n)``), or it bounds the last two
    slices of a buffer (``self.bias[:, :, :n, :n]``)."""
    count = 0
    for call in ast.walk(value):
        if isinstance(call, ast.Subscript) and isinstance(call.slice, ast.Tuple):
            bounds = [p.upper for p in call.slice.elts[-2:] if isinstance(p, ast.Slice) and p.lower is None]
            if len(bounds) == 2 and all(isinstance(b, ast.Name) and b.id == length for b in bounds):
                return True  # ``self.bias[:, :, :n, :n]``: a square block of a buffer
        if isinstance(call, ast.Call):
            given = sum(isinstance(a, ast.Name) and a.id == length for a in call.args)
            if given >= 2:
                return True
            if given and _callee_name(call) in _SIZED:
                count += given
    return count >= 2


def _square_from_one_length(scope: Scope) -> None:
    func = scope.func
    if func is None or scope.following or not scope.callees.get(id(func.node), set()) & _BUILDS:
        return
    assigns = [n for n in _statements(func.node.body) if isinstance(n, ast.Assign)]
    lengths: dict[str, tuple[str, int]] = {}  # a name holding one of the last two axes of a tensor -> (it, the axis)
    for stmt in assigns:
        if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            read = _axis_read(stmt.value)
            if read is not None:
                lengths[stmt.targets[0].id] = read
    if not lengths:
        return
    square: dict[str, tuple[str, str, int]] = {}  # the bias -> (its length, the tensor it was read from, the axis)
    for stmt in assigns:
        stored = list(nm.bound_names(stmt.targets))
        for length, (owner, axis) in lengths.items():
            if _square_in(stmt.value, length):
                square.update({name: (length, owner, axis) for name in stored})
        made_from = _scaled_root(stmt.value)
        if made_from in square:
            for name in stored:
                square.setdefault(name, square[made_from])
    if not square:
        return
    for node in ast.walk(func.node):
        found = _applied(node, square)
        if found is None:
            continue
        bias, owner = found
        if not _scores_or_returned(scope, func.node, node, owner):
            continue
        length, _, axis = square[bias]
        if len({a for o, a in lengths.values() if o == owner}) > 1:
            continue  # both lengths of the scores are read: the code knows they may differ
        reads = [sub for sub in ast.walk(func.node) if isinstance(sub, ast.Attribute) and sub.attr in ("shape", "size")
                 and isinstance(sub.value, ast.Name) and sub.value.id == owner]
        if len(reads) > sum(1 for o, _ in lengths.values() if o == owner):
            continue  # the other lengths of the tensor are read too: the code knows they may differ
        if keys_are_queries(scope, func.node):
            return  # every caller attends the input to itself: the keys are exactly as long as the queries
        scope.report(msg.SquareFromOneLength, node, bias, length, owner, axis)


def keys_are_queries(scope: Scope, func: Function) -> bool:
    """``forward`` of a module whose every call in the file gives its query and key parameters one expression
    (``self.attn(query=x, key=x, value=x)``): a self-attention, whatever the signature allows."""
    owner = scope.func.method_of if scope.func is not None else None
    if owner is None or func.name != "forward":
        return False
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args][1:]]
    query, key = pick(params, "query"), pick(params, "key")
    if query is None or key is None or query == key:
        return False
    memo = f"keys_are_queries:{owner.name}"
    if memo not in scope.memo:
        calls = [(nm.argument(call, params.index(query), query), nm.argument(call, params.index(key), key))
                 for call in _module_calls(scope.tree, owner.name)]
        scope.memo[memo] = bool(calls) and all(q is not None and k is not None and ast.dump(q) == ast.dump(k)
                                               for q, k in calls)
    return bool(scope.memo[memo])


def _module_calls(tree: ast.Module, class_name: str) -> list[ast.Call]:
    """The calls of the modules the file builds from ``class_name`` (``self.attn = Cls(...)``, then
    ``self.attn(...)``)."""
    built = set()
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == class_name
                for c in subtree(node.value)):
            target = node.targets[0]
            built.add(nm.self_attr(target) or (target.id if isinstance(target, ast.Name) else None))
    built.discard(None)
    return [c for c in walk(tree) if isinstance(c, ast.Call)
            and (nm.self_attr(c.func) or (c.func.id if isinstance(c.func, ast.Name) else None)) in built]


def _scaled_root(node: ast.expr) -> Optional[str]:
    """What a tensor is made from by methods, subscripts, a sign, a comparison or a factor: ``a`` for
    ``-a.to(x.dtype) * s``, ``~a``, ``a == 0``."""
    while isinstance(node, (ast.UnaryOp, ast.Compare)) \
            or isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        node = node.operand if isinstance(node, ast.UnaryOp) else node.left
    return nm.chain_root(node)


def _applied(node: ast.AST, square: dict[str, tuple[str, str, int]]) -> Optional[tuple[str, str]]:
    """``x + a``, ``x * a``, ``x += a``, ``x.masked_fill(a, ...)`` for a square ``a`` built from one of x's last two
    axes: (a, x)."""
    pairs: list[tuple[ast.expr, ast.expr]] = []
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        pairs = [(node.left, node.right), (node.right, node.left)]
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
        pairs = [(node.target, node.value)]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("masked_fill", "masked_fill_") and node.args:
        pairs = [(node.func.value, node.args[0])]
    for tensor, other in pairs:
        bias = _scaled_root(other)
        if isinstance(tensor, ast.Name) and bias in square and square[bias][1] == tensor.id:
            return bias, tensor.id
    return None


def _scores_or_returned(scope: Scope, func: Function, node: ast.AST, owner: str) -> bool:
    """Whether what the bias is applied to is known as scores: Q·Kᵀ by data flow, or a parameter the function
    returns with the bias applied (``def forward(self, x): ... return x + a``, a bias module given the scores); not
    a mask the bias is combined with (``bias + attention_mask``, the mask a padding row of one query)."""
    operand = node.target if isinstance(node, ast.AugAssign) else node.func.value if isinstance(node, ast.Call) \
        else node.left if isinstance(node.left, ast.Name) and node.left.id == owner else node.right  # type: ignore
    value = scope.values.get(id(operand))
    if isinstance(value, Tensor) and value.role == "scores":
        return True
    args = func.args
    return owner in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]} and any(
        isinstance(r, ast.Return) and r.value is node for r in _statements(func.body))


@on(ev.FunctionDone)
def square_from_one_length(scope: Scope, e: ev.FunctionDone) -> None:
    _square_from_one_length(scope)
