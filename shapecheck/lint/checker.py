"""The one lint checker: walks statements in order, follows control flow, reports through one ``report``.

Names map to what tracking knows about their values (``env``); at ``if``/``for``/
``try`` the paths are joined and whatever they disagree on becomes unknown.
Expressions are evaluated by its bases ``Calls`` and ``Evaluator``; every check is a function
registered for an event in ``shapecheck.lint.checks``.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Optional, Sequence, Union

from shapecheck.lint import events as ev
from shapecheck.lint import names as nm
from shapecheck.lint import nodes
from shapecheck.lint import ops
from shapecheck.lint.calls import Calls
from shapecheck.lint.scope import FunctionInfo, all_args
from shapecheck.lint.tracking import (Axis, Dim, Label, Pieces, Shape, Target, Tensor, Value, height_label, join,
                                      name_label, per_head_label, replace)


MAX_FOLLOW = 2  # helpers followed inside helpers, at most
_LAYOUT_CALLS = frozenset({"view", "reshape", "transpose", "permute", "flatten", "unflatten", "einsum", "matmul",
                           "bmm", "softmax", "masked_fill", "masked_fill_", "rearrange", "scaled_dot_product_attention"})
_LAYOUT_TEXT = re.compile("@|" + nm.word_first(sorted(_LAYOUT_CALLS), r"\s*\("))  # @|\b(?:view|...)\s*\(


class Checker(Calls, ast.NodeVisitor):
    """Lint one parsed module; ``findings`` holds the results in the order found."""

    def __init__(self, tree: ast.Module, path: str, conventions: Optional[dict[str, str]] = None,
                 source: Optional[str] = None, left_out: frozenset[str] = frozenset()) -> None:
        super().__init__(tree, path)
        self.left_out = left_out
        self.lines = source.splitlines() if source is not None else None  # the text, for cheap questions about it
        self.memo["mask_conventions"] = dict(conventions or {})  # [tool.shapecheck] mask-conventions
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.returns: Optional[list[Optional[Value]]] = None
        self.summaries: dict[tuple, Optional[Value]] = {}
        self.aliases: dict[str, str] = {}  # ``attention_interface = eager_attention_forward``: local -> function
        self.call_sites: dict[str, list[dict[str, Optional[Value]]]] = {}
        self.rebound: Optional[dict[str, Value]] = None
        self.infeasible = False  # the path being run fails for the tensors known, so it reaches nothing after it
        try:
            self.run(tree.body)
        finally:
            nodes.forget()
        self.recheck_called()

    # ---- module-level functions checked again with the tensors their callers pass ----------
    def record_call(self, name: str, call: ast.Call, args: list[Optional[Value]]) -> None:
        """What one call passes to the file's function ``name``: parameter name -> value."""
        helper = self.functions[name]
        positional = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
        site: dict[str, Optional[Value]] = {}
        for param, node, value in zip(positional, call.args, args):
            if isinstance(node, ast.Starred):
                break
            site[param] = value
        names = set(positional) | {a.arg for a in helper.args.kwonlyargs}
        for kw in call.keywords:
            if kw.arg in names:
                site[kw.arg] = self.values.get(id(kw.value))
        self.call_sites.setdefault(name, []).append(site)

    def recheck_called(self) -> None:
        """Each function called in the file with tensors of known rank is run again with them: a parameter
        gets the caller's axes when every call passes it a tensor of known axes, and they agree on the rank."""
        for name, sites in self.call_sites.items():
            bound: dict[str, Value] = {}
            for param in set().union(*sites):
                found = [site.get(param) for site in sites]
                value: Optional[Value] = found[0]
                for other in found[1:]:
                    value = join(value, other) if value is not None and other is not None else None
                if isinstance(value, Tensor) and value.axes is not None:
                    bound[param] = replace(value, uid=0, param=False, partial=False)
            if bound:
                self.rebound = bound
                self.visit(self.functions[name])
                self.rebound = None

    def note_alias(self, target: ast.expr, value: ast.expr) -> None:
        """``attention_interface = eager_attention_forward`` (or ``get_interface(impl, eager_attention_forward)``):
        calls of the local name reach that function of the file."""
        if not isinstance(target, ast.Name):
            return
        candidates = [value] if isinstance(value, ast.Name) else [
            *value.args, *(k.value for k in value.keywords)] if isinstance(value, ast.Call) else []
        for node in candidates:
            if isinstance(node, ast.Name) and node.id in self.functions and node.id not in self.env:
                self.aliases[target.id] = node.id
                return

    # ---- helpers of the same file, followed with the caller's tensors ---------------------
    def name_call(self, node: ast.Call, name: str, args: list[Optional[Value]]) -> Optional[Value]:
        helper = self.functions.get(name)
        target = name if helper is not None and name not in self.env else self.aliases.get(name)
        if target is not None and not self.following and self.rebound is None:
            self.record_call(target, node, args)
        if helper is not None and name not in self.env:
            found = self.follow(helper, node, args, method=False)
            if found is not None:
                return found  # else what its name says (``q = apply_rope(q, ...)`` keeps q)
        return super().name_call(node, name, args)

    def module_call(self, node: ast.Call, attr: str, args: list[Optional[Value]]) -> Optional[Value]:
        method = self.cls.methods.get(attr) if self.cls is not None else None
        if method is not None:
            return self.follow(method, node, args, method=True)
        chosen = [self.follow(f, node, args, method=False) for f in self.bound_functions(attr)]
        if chosen:  # ``self.attn_fn = xformers_attn if fast else torch_attn``: each is run with these tensors
            return chosen[0] if all(c == chosen[0] for c in chosen) else None
        other = self.module_class(attr)
        if other is not None and self.reads_layout():
            found = self.follow_class(other, node, args)
            if found is not None:
                return found
        return super().module_call(node, attr, args)

    def bound_functions(self, attr: str) -> list[Union[ast.FunctionDef, ast.AsyncFunctionDef]]:
        """The functions of this file ``__init__`` binds ``self.attr`` to: a name, or either of a conditional
        expression's (``self.attn_fn = xformers_attn if cuda else torch_attn``)."""
        made = self.class_attr(attr) if self.cls is not None else None
        options = [made.body, made.orelse] if isinstance(made, ast.IfExp) else [made]
        return [self.functions[o.id] for o in options
                if isinstance(o, ast.Name) and o.id in self.functions and o.id not in self.env]

    def module_class(self, attr: str) -> Optional[ast.ClassDef]:
        """The class of this file that made ``self.attr`` (``self.attn = Attention(cfg)``), when it has a
        ``forward`` and is not the class being checked."""
        made = self.class_attr(attr) if self.cls is not None else None
        if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name)):
            return None
        found = self.classes.get(made.func.id)
        forward = _forward(found) if found is not None and found.name != self.cls.name else None  # type: ignore[union-attr]
        if forward is None or not self.reads_layout(forward):
            return None  # a forward that does nothing to a layout (an MLP, a norm) is not run: cheap, and little lost
        return found

    def reads_layout(self, node: Optional[ast.AST] = None) -> bool:
        """Whether a function (the current one by default) does anything with a tensor's layout or scores (a view,
        transpose, product, softmax, fill): only then is another class's ``forward`` worth running for its result."""
        if node is None:
            if self.func is None:
                return False
            node = self.func.node
        key = f"reads_layout:{id(node)}"
        if key not in self.memo and self.lines is not None:  # a search of the function's text: far cheaper than a walk
            text = "\n".join(self.lines[node.lineno - 1:node.end_lineno or node.lineno])
            self.memo[key] = _LAYOUT_TEXT.search(text) is not None
        if key not in self.memo:
            self.memo[key] = any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)
                or isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name))
                and (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) in _LAYOUT_CALLS
                for n in ast.walk(node))
        return self.memo[key]  # type: ignore[return-value]

    def follow_class(self, other: ast.ClassDef, call: ast.Call, args: list[Optional[Value]]) -> Optional[Value]:
        """``self.attn(x)`` where ``self.attn = Attention(...)`` of this file: what that class's ``forward``
        returns for these tensors, run with that class's sizes (inside, only the layout rules report)."""
        saved = self.cls
        self.cls = self.class_info_of(other)
        try:
            return self.follow(_forward(other), call, args, method=True)  # type: ignore[arg-type]
        finally:
            self.cls = saved

    def follow(self, helper: Union[ast.FunctionDef, ast.AsyncFunctionDef], call: ast.Call,
               args: list[Optional[Value]], method: bool) -> Optional[Value]:
        """The helper's result for these arguments: its body run once per distinct argument summary."""
        if len(self.following) >= MAX_FOLLOW or helper in self.following or not any(
                isinstance(a, Tensor) for a in args):
            return None
        args = [self._as_size(a, node) for a, node in zip(args, call.args)]
        bound = _bind_arguments(helper, call, args, method)
        if bound is None:
            return None
        key = (id(helper), tuple(sorted((k, _summary(v)) for k, v in bound.items())))
        if key not in self.summaries:
            self.summaries[key] = None  # a recursive call meets an unknown result
            self.summaries[key] = self._run_helper(helper, bound, method)
        return self.summaries[key]

    def _as_size(self, value: Optional[Value], node: ast.expr) -> Optional[Value]:
        """An argument with no tracked value that spells a size (``self.num_heads``) is passed as that size."""
        if value is not None:
            return value
        label = self.size_label(node)
        return Dim(label) if label is not None else None

    def _run_helper(self, helper: Union[ast.FunctionDef, ast.AsyncFunctionDef], bound: dict[str, Optional[Value]],
                    method: bool) -> Optional[Value]:
        saved = (self.env, self.scalars, self.func, self.in_class, self.returns, self.targets, self.infeasible)
        params = frozenset(a.arg for a in all_args(helper.args))
        owner = self.cls if method else None
        key = f"function_info:{id(helper)}:{id(owner)}"  # one per function and class: what it assigns is walked once
        if key not in self.memo:
            self.memo[key] = FunctionInfo(helper, owner, params)
        self.func = self.memo[key]  # type: ignore[assignment]
        self.env, self.scalars, self.in_class, self.returns, self.infeasible = {}, {}, False, [], False
        self.bind_scope(helper.args)
        self.env.update({k: v for k, v in bound.items() if v is not None})
        self.following.append(helper)
        try:
            self.run(helper.body)
            found = self.returns
        finally:
            self.following.pop()
            self.env, self.scalars, self.func, self.in_class, self.returns, self.targets, self.infeasible = saved
        if not found or any(v is None for v in found):
            return None
        result = found[0]
        for other in found[1:]:
            result = join(result, other) if result is not None else None  # type: ignore[arg-type]
        return result

    def visit_Return(self, node: ast.Return) -> None:
        value = self.ev(node.value)
        if self.returns is not None and not self.infeasible:
            self.returns.append(value)
        self.infeasible = True

    def visit_Raise(self, node: ast.Raise) -> None:
        self.generic_visit(node)
        self.infeasible = True

    # ---- statements ----------------------------------------------------------------------
    _visit_methods: dict[type, Callable] = {}  # node type -> its ``visit_<Type>`` (or ``generic_visit``), per class

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._visit_methods = {}

    def visit(self, node: ast.AST) -> None:
        method = self._visit_methods.get(node.__class__)
        if method is None:  # looked up once per node type, not by name at each statement
            kind = self.__class__
            method = kind._visit_methods[node.__class__] = getattr(kind, "visit_" + node.__class__.__name__,
                                                                    kind.generic_visit)
        method(self, node)

    def run(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> None:
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and isinstance(value[0], ast.stmt):
                    self.run(value)
                else:
                    for item in value:
                        if isinstance(item, ast.expr):
                            self.ev(item)
            elif isinstance(value, ast.expr):
                self.ev(value)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.ev(expr)
        saved = (self.cls, self.in_class, self.env)
        self.cls, self.in_class, self.env = self.class_info_of(node), True, dict(self.env)
        self.run(node.body)
        self.cls, self.in_class, self.env = saved

    def visit_FunctionDef(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        args = node.args
        for expr in [*node.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.ev(expr)
        saved = (self.env, self.scalars, self.func, self.in_class, self.returns, self.aliases, self.infeasible)
        params = frozenset(a.arg for a in all_args(args))
        self.func = FunctionInfo(node, self.cls if self.in_class else None, params)
        self.env, self.scalars, self.in_class, self.returns = dict(self.env), dict(self.scalars), False, None
        self.infeasible = False
        self.aliases = {}
        self.bind_scope(args)
        if self.rebound is not None:
            self.env.update({k: replace(v, uid=next(self.uid)) for k, v in self.rebound.items() if k in params})
            self.rebound = None  # not the functions defined inside

        self.run(node.body)
        self.emit(ev.FunctionDone(node))
        self.env, self.scalars, self.func, self.in_class, self.returns, self.aliases, self.infeasible = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        self.targets = tuple(nm.bound_names(node.targets))
        value = self.ev(node.value)
        self.targets = ()
        for target in node.targets:
            self.bind(target, value, node.value)
            self.note_alias(target, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, self.ev(node.value), node.value)
            self.note_alias(node.target, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        current = self.ev(node.target) if isinstance(node.target, ast.Name) else None
        value = self.ev(node.value)
        result = self.binop(node, node.target, node.op, node.value, current, value)
        if isinstance(node.target, ast.Name):
            self.store(node.target.id, result, node.value)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self.emit(ev.Discarded(node.value))
        self.ev(node.value)
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and nm.out_of_place(call.func.attr) != call.func.attr and isinstance(call.func.value, ast.Name):
            # ``scores.masked_fill_(m, v)``, ``q.transpose_(1, 2)``: the receiver takes what the twin gives
            result = self.values.get(id(call))
            if result is not None:
                self.store(call.func.value.id, result, call)

    def visit_Assert(self, node: ast.Assert) -> None:
        """``assert dot.size() == (b * h, t, t)``: the sizes name the axes nobody had named."""
        self.ev(node.test)
        self.ev(node.msg)
        test = node.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            return
        for side, sizes in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            owner = nm.shape_owner(side)
            if owner is not None and isinstance(sizes, (ast.Tuple, ast.List)) \
                    and not any(isinstance(e, ast.Starred) for e in sizes.elts):
                self.bind_sizes(owner, [self.label_of(e) for e in sizes.elts])

    def bind_sizes(self, owner: str, sizes: list[Target]) -> None:
        tensor = self.env.get(owner)
        if tensor is None:
            tensor = Tensor(uid=next(self.uid))  # a value nobody knew: its shape makes it a tensor
        if not isinstance(tensor, Tensor) or tensor.axes is not None and len(tensor.axes) != len(sizes) \
                or tensor.min_rank is not None and tensor.min_rank > len(sizes):
            return
        labels = [s if isinstance(s, Label) else None for s in sizes]
        axes = [a if a is not None else b for a, b in zip(tensor.axes or [None] * len(labels), labels)]
        if len({a for a in axes if a is not None}) < len([a for a in axes if a is not None]) and tensor.role != "scores":
            return  # two axes of one name outside the scores: the sizes do not tell them apart
        self.env[owner] = _with_axes(tensor, tuple(axes))

    def visit_If(self, node: ast.If) -> None:
        self.ev(node.test)
        self.emit(ev.Branches(node))
        self.branch([node.body, node.orelse], keep_entry=False)

    def visit_For(self, node: Union[ast.For, ast.AsyncFor]) -> None:
        self.ev(node.iter)
        self.bind(node.target, None, None)
        self.branch([node.body], keep_entry=True)
        self.run(node.orelse)

    visit_AsyncFor = visit_For

    def visit_While(self, node: ast.While) -> None:
        self.ev(node.test)
        self.branch([node.body], keep_entry=True)
        self.run(node.orelse)

    def visit_Try(self, node: ast.Try) -> None:
        self.branch([node.body + node.orelse, *(h.body for h in node.handlers)], keep_entry=False)
        self.run(node.finalbody)

    visit_TryStar = visit_Try

    def visit_With(self, node: Union[ast.With, ast.AsyncWith]) -> None:
        for item in node.items:
            self.ev(item.context_expr)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, None, None)
        self.run(node.body)

    visit_AsyncWith = visit_With

    def visit_Match(self, node: ast.AST) -> None:
        self.ev(node.subject)  # type: ignore[attr-defined]
        for case in node.cases:  # type: ignore[attr-defined]
            self.ev(case.guard)
        self.branch([case.body for case in node.cases], keep_entry=True)  # type: ignore[attr-defined]

    def branch(self, bodies: list[list[ast.stmt]], keep_entry: bool) -> None:
        """Run each body from the entry state and join what reaches the code after: a path that returns or
        raises, or that fails for the tensors known (``B, L, C = x.shape`` on a 4-D x), does not reach it."""
        entry, outs, ended = (self.env, self.scalars), [], []
        for body in bodies:
            self.env, self.scalars, self.infeasible = dict(entry[0]), dict(entry[1]), False
            self.run(body)
            (ended if self.infeasible else outs).append((self.env, self.scalars))
        if keep_entry:
            outs.append(entry)
        self.infeasible = not outs  # no path falls through: what follows is reached by none of them
        outs = outs or ended
        self.env = join_envs([env for env, _ in outs])
        self.scalars = join_scalars(outs)

    # ---- binding -------------------------------------------------------------------------
    def bind(self, target: ast.expr, value: Optional[Value], node: Optional[ast.expr]) -> None:
        if isinstance(target, ast.Name):
            self.store(target.id, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target.elts, value, node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, None, None)

    def unpack(self, elts: list[ast.expr], value: Optional[Value], node: Optional[ast.expr] = None) -> None:
        starred = any(isinstance(e, ast.Starred) for e in elts)
        if isinstance(value, Shape) and not starred:
            self.unpack_shape(elts, value)
            return
        items: list[Optional[Value]] = [None] * len(elts)
        if isinstance(value, Tensor) and not starred and _reshaped(node):
            items = [ops.first_axis_item(value)] * len(elts)  # ``q, k, v = qkv.view(...).permute(2, 0, 3, 1, 4)``
        if isinstance(value, Pieces) and not starred:
            if value.repeat:
                items = [value.items[0]] * len(elts)
            elif len(value.items) == len(elts):
                items = list(value.items)
        for e, item in zip(elts, items):
            self.bind(e, item, None)

    def unpack_shape(self, elts: list[ast.expr], shape: Shape) -> None:
        """``B, T, C = x.shape``: names the sizes, and names x's axes where nobody had."""
        if shape.known and len(shape.axes) != len(elts):
            for e in elts:
                self.bind(e, None, None)
            self.infeasible = True  # the unpacking raises for this tensor: the path goes no further
            return
        labels: list[Axis] = []
        names = [e.id if isinstance(e, ast.Name) else None for e in elts]
        for k, e in enumerate(elts):
            known = shape.axes[k] if shape.known else None
            label = known if isinstance(known, Label) else _label_from_name(e)
            label = height_label(names, k) or label  # ``b, c, h, w``: h is no head count
            labels.append(label)
        labels[-1] = per_head_label(labels) or labels[-1]  # ``b, heads, dim = q.shape``: dim is one head's size
        for e, label in zip(elts, labels):
            self.bind(e, Dim(label), None)
        owner = self.env.get(shape.owner) if shape.owner else None
        if isinstance(owner, Tensor) and (owner.axes is None or len(owner.axes) == len(labels)):
            old = owner.axes or (None,) * len(labels)
            axes = tuple(a if a is not None else b for a, b in zip(old, labels))
            self.env[shape.owner] = _with_axes(owner, axes)  # type: ignore[index]

    def store(self, name: str, value: Optional[Value], node: Optional[ast.expr]) -> None:
        if isinstance(value, Dim) and value.label is None:
            label = _label_from_name(ast.Name(name))
            if value.axis_of is not None and label is not None:
                self.name_axis(*value.axis_of, label)
            value = Dim(label)
        self.env[name] = None if value is None else replace(value, uid=next(self.uid), partial=False)
        if isinstance(value, Tensor) or node is None:
            self.scalars.pop(name, None)
        else:
            self.scalars[name] = node

    def name_axis(self, owner: str, index: int, label: Label) -> None:
        """``src_len = key_states.size(1)``: the size's name names that axis of the tensor where nobody had."""
        tensor = self.env.get(owner)
        if tensor is None:
            tensor = Tensor(uid=next(self.uid))  # a value nobody knew: its shape makes it a tensor
        if not isinstance(tensor, Tensor) or tensor.axes is None or not -len(tensor.axes) <= index < len(tensor.axes):
            return
        axes = list(tensor.axes)
        if axes[index] is None and label not in axes:
            axes[index] = label
            self.env[owner] = replace(tensor, axes=tuple(axes))


def join_scalars(paths: list[tuple[dict[str, Optional[Value]], dict[str, ast.expr]]]) -> dict[str, ast.expr]:
    """The size expression each name holds after paths (env, scalars) meet: kept where every path that binds the
    name binds it to the same expression (the same text); ``num_heads = 1`` on one path and ``B, num_heads, L, C =
    x.shape`` on another leave it unknown."""
    if len(paths) == 1:
        return paths[0][1]
    out = {}
    for name in set().union(*(scalars for _, scalars in paths)):
        held = [scalars.get(name) for env, scalars in paths if name in env or name in scalars]
        if None in held:
            continue
        if len({id(node) for node in held}) == 1 or len({ast.dump(node) for node in held}) == 1:
            out[name] = held[0]  # ``heads = self.num_heads`` written on both paths agrees
    return out


def join_envs(envs: list[dict[str, Optional[Value]]]) -> dict[str, Optional[Value]]:
    """Names after paths meet: a name some path lacks is ``partial`` (maybe unbound)."""
    if len(envs) == 1:
        return envs[0]
    out: dict[str, Optional[Value]] = {}
    for key in set().union(*envs):
        found = [e[key] for e in envs if key in e]
        if any(v is None for v in found):
            tensors = [v for v in found if isinstance(v, Tensor)]
            if tensors and len(tensors) + 1 == len(found) and all(_fused_output(t) for t in tensors) \
                    and len({t.axes for t in tensors}) == 1:
                # an unknown kernel on one path, a fused one on the other (``flash_attention(q, k, v)`` or SDPA),
                # or an unknown pooling helper: the code after the paths meet serves both, so it takes the
                # known path's layout and scaling
                out[key] = replace(tensors[0], uid=0, partial=False)
            elif tensors and len(tensors) + 1 == len(found) and tensors[0].scale in ("none", "head"):
                # keys from a cache on one path, projected on the other: those in the cache were made the same
                # way, so the scaling is the known path's; nothing else about them is known
                out[key] = Tensor(scale=tensors[0].scale, scale_at=tensors[0].scale_at)
            else:
                out[key] = None
            continue
        value: Optional[Value] = found[0]
        for other in found[1:]:
            if value is None:
                break
            if other is not value:
                value = join(value, other)  # type: ignore[arg-type]
        if value is not None and len(found) < len(envs):
            value = replace(value, partial=True)
        out[key] = value
    return out


def _bind_arguments(helper: Union[ast.FunctionDef, ast.AsyncFunctionDef], call: ast.Call,
                    args: list[Optional[Value]], method: bool) -> Optional[dict[str, Optional[Value]]]:
    """Parameter name -> the caller's value; None when the call cannot be matched plainly."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    positional = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
    if method:
        positional = positional[1:]
    if len(args) > len(positional):
        return None
    bound: dict[str, Optional[Value]] = dict(zip(positional, args))
    names = set(positional) | {a.arg for a in helper.args.kwonlyargs}
    return bound if all(k.arg in names for k in call.keywords) else None


def _summary(value: Optional[Value]) -> object:
    """What a followed helper's result can depend on: the value without its identity."""
    return None if value is None else replace(value, uid=0, partial=False)


def _fused_output(t: Tensor) -> bool:
    """Axes known, memory order not (a fused kernel's output, a piece of an unbound qkv), the heads and the head
    size apart: per-head queries, keys, values or outputs."""
    axes = t.axes or ()
    return t.order is None and t.role is None and any(a is not None and a.atoms == ("heads",) for a in axes) \
        and any(a is not None and a.atoms == ("d_head",) for a in axes)


def _with_axes(tensor: Tensor, axes: tuple[Axis, ...]) -> Tensor:
    """A tensor of unknown rank given its axes: the key axis, counted from the end until now, from the start."""
    key_pos = tensor.key_pos if tensor.key_pos is None or tensor.key_pos >= 0 else tensor.key_pos % len(axes)
    return replace(tensor, axes=axes, key_pos=key_pos, param=False, min_rank=None)


def _label_from_name(node: ast.expr) -> Axis:
    if isinstance(node, ast.Name) and node.id not in ("_", "dim"):
        return name_label(node.id)
    return None


def _forward(node: ast.ClassDef) -> Optional[ast.FunctionDef]:
    return next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "forward"
                 and not s.decorator_list), None)


_RESHAPES = frozenset({"view", "reshape", "permute", "transpose", "contiguous", "unflatten"})


def _reshaped(node: Optional[ast.expr]) -> bool:
    """``qkv.view(...).permute(...)``: a tensor this function reshaped itself, so unpacking it iterates its first
    axis (a module's or helper's result may be a tuple of tensors instead)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RESHAPES
