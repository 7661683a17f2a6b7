"""Abstract evaluation of expressions: what each one is (tensor with named axes, size, shape).

``Evaluator.ev`` visits every sub-expression exactly once, remembers its value by
node, and emits an event (``shapecheck.lint.events``) where an operation may be
wrong; the checks registered for that event decide whether it is.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Callable, Optional, Sequence

from shapecheck.vocabulary import canonical
from shapecheck.lint import events as ev
from shapecheck.lint import names as nm
from shapecheck.lint import ops
from shapecheck.lint.scope import ClassInfo, Scope, class_info, is_head_count
from shapecheck.lint.tracking import (
    WILD, Axis, Dim, Label, Pieces, Shape, Target, Tensor, Value, broadcast, int_label, join, matmul, name_label,
    product, quotient, replace, swap,
)
from shapecheck.lint.nodes import children, of_type, subtree, walk

_WORD = re.compile(r"[A-Za-z_]\w*")


def _label_words(label: Label) -> list[str]:
    """The names a size's label is made of; a size divided by a named count (``d_model//nb_heads``) is one head's,
    as a width divided by a name is in the factor itself (``d_model//2`` is not)."""
    split = any(a.startswith("/") and not a[1:].isdigit() for a in label.atoms)
    return _WORD.findall(label.text) + (["heads"] if split else [])


class Evaluator(Scope):
    """Expression evaluation over ``self.env`` (name -> Value); ``Calls`` adds calls, the checker statements."""

    # ---- what the events report -----------------------------------------------------
    def softmax(self, call: ast.Call, node: Optional[ast.expr], t: Optional[Value], dim: Optional[ast.expr],
                has_dim: bool) -> Tensor:
        if not isinstance(t, Tensor):
            return Tensor(role="probs")
        self.emit(ev.Softmax(call, node, t, dim, has_dim))
        return Tensor(axes=t.axes, role="probs", scale=t.scale if t.role == "scores" else "unknown")

    def scaled(self, node: ast.AST, t: Tensor, factor: ast.expr) -> Tensor:
        if t.role == "probs" and t.scale == "unknown":
            return replace(t, uid=0, param=False)  # a softmax of what no query and key made (a beam
            # search's log-probabilities): whatever multiplies it, it stays no attention's
        defined = self.scalar_definition(factor)
        if isinstance(defined, ast.Constant) and defined.value == 1:
            return t  # ``q * scale`` with ``scale = 1``: nothing is scaled
        kind = self.root_kind(factor, 0) or self.own_last_axis(node, factor) or self.named_kind(factor, t.contracted)
        if kind in ("head", "width", "heads") and self.undoes(node, factor):
            kind = "other"  # ``q * math.sqrt(d)``: a root that undoes a scaling (GPT-Neo's, cancelled before SDPA)
        if kind == "head" and QUARTER.search(ast.unparse(defined)):  # d_head ** -0.25: half the scaling
            kind = "head" if t.scale == "quarter" else "quarter" if t.scale == "none" else t.scale
        self.emit(ev.Scaled(node, t, factor, kind))
        text = ast.unparse(factor)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and t.divided is not None \
                and t.divided[0] == text:  # soft-capping: cap * tanh(s / cap) keeps the scaling s had
            return replace(t, scale=t.divided[1], divided=None, uid=0, param=False)
        divided = (text, t.scale) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else None
        at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if t.scale in ("unit", "cosine"):  # a temperature on unit vectors or their similarities
            kind = kind if kind in ("width", "heads") else "other"
        elif t.scale not in ("none", "unknown", "quarter") and kind not in ("width", "heads"):
            if t.scale in ("width", "heads") and t.scale_at is not None:
                at = t.scale_at  # a further factor (``/ float(layer_idx + 1)``) leaves the wrong one where it was
            kind = t.scale if t.scale != "other" else kind
        return replace(t, scale=kind, scale_at=at, order=t.order, uid=0, param=False, divided=divided)

    def undoes(self, node: ast.AST, factor: ast.expr) -> bool:
        """The factor multiplies by a square root (or divides by a reciprocal one): the scores grow by it."""
        attr = nm.self_attr(factor)
        defined = self.class_attr(attr) if attr is not None else self.scalar_definition(factor)
        if defined is None or root_base(defined) is None:
            return False
        divides = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) or \
            isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) or \
            isinstance(node, ast.Call) and nm.out_of_place(getattr(node.func, "attr", "")) == "div"
        return divides == _reciprocal(defined)

    def named_kind(self, factor: ast.expr, contracted: Axis = None) -> str:
        """The scale's kind by the names in it. A width by name is one head's size in a class with no head count,
        unless the scores it scales sum over one head's features by data flow (``nn.Linear(n_embd, head_size)``'s
        output: one head of a module that runs several, scaled by ``C ** -0.5``)."""
        names = self.scale_names(factor, 0)
        kind = nm.scale_kind(names)
        if kind == "other" and self.cls is not None and any(n in self.cls.widths for n in names):
            kind = "width"  # what the class splits by its head count (``embedding_dim // nb_heads``), by any name
        if kind == "width" and self.cls is not None and any(n in self.cls.head_sizes for n in names):
            return "head"  # ``self.hidden`` of ``nn.Linear(d, self.n_heads * self.hidden)``: one head's size
        if kind == "width" and contracted is not None and any(
                isinstance(d, Dim) and d.label == contracted for d in map(self.env.get, names)):
            return "head"  # the square root of the very axis Q·Kᵀ sums over (``B, C, H, W = x.shape``, one head)
        per_head = contracted is not None and contracted.atoms == ("d_head",)
        return "head" if kind == "width" and self.cls is not None and not self.cls.multi_head and not per_head \
            else kind

    def scalar_definition(self, factor: ast.expr) -> ast.expr:
        """The expression a scale factor's local name holds (``scale = (n_state // n_head) ** -0.25``), or the
        factor itself."""
        for _ in range(3):
            if not (isinstance(factor, ast.Name) and factor.id in self.scalars):
                break
            factor = self.scalars[factor.id]
        return factor

    def root_kind(self, factor: ast.expr, depth: int) -> Optional[str]:
        """"width" when the factor is a (reciprocal) square root of the head count times the head size
        (``self.all_head_size ** -0.5`` with ``all_head_size = heads * head_size``), whatever the scale is called;
        "heads" when it is one of the head count alone (``/ math.sqrt(self.num_heads)``, ``* heads ** -0.5``)."""
        node = factor.operand if isinstance(factor, ast.UnaryOp) else factor
        attr = nm.self_attr(node)
        if attr is not None and depth < 2:
            defined = self.class_attr(attr)
            if isinstance(defined, ast.Name) and depth == 0:
                return self.passed_kind(defined.id)  # ``self.temperature = temperature``: what callers pass
            return self.root_kind(defined, depth + 1) if isinstance(defined, (ast.BinOp, ast.Call)) else None
        if isinstance(node, ast.Name) and depth == 0 and node.id in self.scalars:
            # ``scale = self.num_heads ** -0.5`` in forward: only the head count is trusted through a local name
            found = self.root_kind(self.scalars[node.id], 1)
            return found if found == "heads" else None
        base = root_base(node)
        if base is not None and is_head_count(base, self.cls):
            return "heads"
        spelled = nm.self_attr(base) if base is not None else None
        if depth > 0 and isinstance(base, ast.Name):
            spelled = base.id  # ``self.scale = dim ** -0.5`` in __init__: its names are __init__'s
        if spelled is not None and self.cls is not None and spelled in self.cls.widths:
            return "width"  # the square root of what the head count splits
        if isinstance(base, ast.Name) and depth == 0 and base.id in self.split_widths():
            return "width"  # ``C`` of ``view(B, T, n_head, C // n_head)``: the width, whatever it is called
        made = self.class_attr(nm.self_attr(base) or "") if base is not None else None
        if isinstance(made, ast.BinOp):
            base = made
        if not (isinstance(base, ast.BinOp) and isinstance(base.op, ast.Mult)):
            return None  # a width by its name alone may be one head's (single-head attention): the names decide
        label = self.static_label(base, 0)
        return "width" if label is not None and label.atoms == ("d_head", "heads") else None

    def own_last_axis(self, node: ast.AST, factor: ast.expr) -> Optional[str]:
        """"head" when the scale is the last size of a tensor the scaled expression reads, or its square root
        (``B, Nt, E = q.shape; q = q / math.sqrt(E)``, muP's ``q / E``): d_k read off the query itself, whatever
        the size is called, is the size Q·Kᵀ sums over, never a width the heads split."""
        defined = self.scalar_definition(factor)
        base = root_base(defined) or defined
        if not isinstance(base, ast.Name) or not isinstance(node, ast.BinOp):
            return None
        owner = self.last_sizes().get(base.id)
        if owner is None:
            return None
        if owner in nm.identifiers(node.left):
            return "head"
        made = {nm.chain_root(a) for side in (node.left, node.right) if isinstance(side, ast.Name)
                for a in self.product_operands(side.id)}  # ``scores = einsum(eq, q, k)``, then ``scale * scores``
        return "head" if owner in made else None

    def product_operands(self, name: str) -> list[ast.expr]:
        """The operands of the product a name of the current function is bound to once (``s = q @ k.T``,
        ``s = torch.einsum(eq, q, k)``, ``torch.matmul``/``bmm``): the query and keys its scores were made of."""
        func = self.func
        if func is None:
            return []
        values = [a.value for a in of_type(func.node, ast.Assign)
                  if len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) and a.targets[0].id == name]
        return nm.product_operands(values[0]) if len(values) == 1 else []

    def last_sizes(self) -> dict[str, str]:
        """Names of the current function bound once to the last size of a tensor: ``B, T, E = q.shape``,
        ``d = q.size(-1)``, ``d = q.shape[-1]`` -> {name: the tensor's name}."""
        func = self.func
        if func is None:
            return {}
        key = f"last_sizes:{id(func.node)}"
        if key not in self.memo:
            stores = Counter(n.id for n in of_type(func.node, ast.Name) if isinstance(n.ctx, ast.Store))
            found = {}
            for assign in of_type(func.node, ast.Assign):
                target, value = assign.targets[0], assign.value
                if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[-1], ast.Name):
                    name, owner = target.elts[-1].id, nm.shape_owner(value)
                elif isinstance(target, ast.Name):
                    name, owner = target.id, _last_size_of(value)
                else:
                    continue
                if owner is not None and stores[name] == 1:
                    found[name] = owner
            self.memo[key] = found
        return self.memo[key]  # type: ignore[return-value]

    def split_widths(self) -> frozenset[str]:
        """Names of the current function that the head count splits (``C // self.n_head``): by data flow they
        carry the model width, whatever their name; reassigned names are left out."""
        func = self.func
        if func is None:
            return frozenset()
        key = f"split_widths:{id(func.node)}"
        if key not in self.memo:
            stores = Counter(n.id for n in of_type(func.node, ast.Name) if isinstance(n.ctx, ast.Store))
            self.memo[key] = frozenset(
                n.left.id for n in of_type(func.node, ast.BinOp)
                if isinstance(n.op, (ast.FloorDiv, ast.Div)) and isinstance(n.left, ast.Name)
                and is_head_count(n.right, self.cls) and stores[n.left.id] <= 1)
        return self.memo[key]  # type: ignore[return-value]

    def passed_kind(self, param: str) -> Optional[str]:
        """"heads" or "width" when every construction of this class in the module passes that square root for
        the ``__init__`` parameter ``param`` (``ScaledDotProductAttention(temperature=d_model ** 0.5)``)."""
        cls = self.cls
        if cls is None or param not in cls.init_params:
            return None
        key = f"passed_kind:{cls.name}.{param}"
        if key not in self.memo:
            self.memo[key] = _passed_kind(self.tree, cls.name, cls.init_params.index(param), param)
        return self.memo[key]  # type: ignore[return-value]

    def scale_names(self, node: ast.AST, depth: int) -> list[str]:
        """Identifiers a scale factor is made of, following local names and ``self.`` attributes."""
        found: list[str] = []
        for sub in subtree(node):
            if isinstance(sub, ast.Name):
                found.extend(self._name_parts(sub.id, depth))
            elif isinstance(sub, ast.Attribute):
                found.append(sub.attr)
                defined = self.class_attr(sub.attr) if nm.self_attr(sub) else None
                if defined is not None and depth < 3:
                    found.extend(self.scale_names(defined, depth + 1))
            elif isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Div, ast.FloorDiv)) \
                    and not isinstance(sub.right, ast.Constant) and not isinstance(sub.left, ast.Constant):
                found.append("heads")  # a width divided by something: a per-head size (``1 / sqrt(C)`` is a
                # reciprocal, not a split)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "size":
                value = self.values.get(id(sub))
                if isinstance(value, Dim) and value.label is not None:
                    found.extend(_label_words(value.label))
        return found

    def _name_parts(self, name: str, depth: int) -> list[str]:
        value = self.env.get(name)
        if name in self.scalars and depth < 3:
            return [name, *self.scale_names(self.scalars[name], depth + 1)]
        if isinstance(value, Dim):
            return [name, *_label_words(value.label)] if value.label is not None else [name]
        return [name]

    def masked_fill(self, call: ast.Call, receiver: Optional[ast.expr], t: Optional[Value],
                    mask: Optional[ast.expr], fill: Optional[ast.expr]) -> Optional[Value]:
        self.emit(ev.MaskedFill(call, receiver, t, mask, fill))
        return _masked(t, call, receiver, self.env)

    _ev_methods: dict[type, Callable] = {}  # node type -> its ``ev_<Type>`` (or ``ev_children``), per class

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._ev_methods = {}

    def ev(self, node: Optional[ast.AST]) -> Optional[Value]:
        if node is None:
            return None
        method = self._ev_methods.get(node.__class__)
        if method is None:  # looked up once per node type, not by name at each node
            kind = self.__class__
            method = kind._ev_methods[node.__class__] = getattr(kind, "ev_" + node.__class__.__name__,
                                                                 kind.ev_children)
        value = method(self, node)
        if value is not None:
            self.values[id(node)] = value
        return value

    def ev_children(self, node: ast.AST) -> None:
        for child in children(node):
            if isinstance(child, (ast.expr, ast.keyword)):
                self.ev(child)
            elif isinstance(child, ast.comprehension):
                self.ev(child.iter)
        return None

    def ev_Constant(self, node: ast.Constant) -> None:
        return None  # a literal: no tracked value, nothing under it

    def ev_keyword(self, node: ast.keyword) -> Optional[Value]:
        return self.ev(node.value)

    def ev_Name(self, node: ast.Name) -> Optional[Value]:
        return self.env.get(node.id)

    def ev_Starred(self, node: ast.Starred) -> Optional[Value]:
        return self.ev(node.value)

    def ev_Await(self, node: ast.Await) -> Optional[Value]:
        return self.ev(node.value)

    def ev_NamedExpr(self, node: ast.NamedExpr) -> Optional[Value]:
        value = self.ev(node.value)
        self.env[node.target.id] = value
        return value

    def ev_IfExp(self, node: ast.IfExp) -> Optional[Value]:
        self.ev(node.test)
        a, b = self.ev(node.body), self.ev(node.orelse)
        self.emit(ev.Choice(node))
        return None if a is None or b is None else join(a, b)

    def ev_Attribute(self, node: ast.Attribute) -> Optional[Value]:
        base = self.ev(node.value)
        if not isinstance(base, Tensor):
            return None
        if node.attr == "shape":
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            return Shape((), owner, known=False) if base.axes is None else Shape(base.axes, owner)
        if node.attr == "mT" or (node.attr == "T" and base.rank == 2):
            return _swap_key(base, -2, -1)
        return base if node.attr == "data" else None

    def ev_Subscript(self, node: ast.Subscript) -> Optional[Value]:
        base = self.ev(node.value)
        self.ev(node.slice)
        if isinstance(base, Shape):
            found = _index_shape(base, node.slice) if base.known else _index_unknown(node.slice)
            i = nm.int_value(node.slice)
            if isinstance(found, Dim) and found.label is None and base.owner is not None and i is not None:
                return replace(found, axis_of=(base.owner, i))
            return found
        if isinstance(base, Tensor):
            return ops.index(base, node.slice)
        return None

    def ev_Tuple(self, node: ast.Tuple) -> Optional[Value]:
        items = [self.ev(e) for e in node.elts]
        spread = self.spread_pieces(node.elts, items)
        if spread is not None:
            return spread
        if any(isinstance(e, ast.Starred) for e in node.elts) or all(
            isinstance(v, Dim) or nm.int_value(e) is not None or _self_size(e, v) for v, e in zip(items, node.elts)
        ):
            axes = self.target_of(node.elts)
            return None if axes is None else Shape(tuple(axes))
        return Pieces(tuple(items))  # type: ignore[arg-type]

    ev_List = ev_Tuple

    def spread_pieces(self, elts: list[ast.expr], items: list[Optional[Value]]) -> Optional[Pieces]:
        """``q, k, v = (self.to_q(x), *self.to_kv(x).chunk(2, dim=1))``: tensors and spread pieces, one per name
        assigned (the pieces of a ``chunk`` fill the names the others leave)."""
        starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
        if len(starred) != 1 or not isinstance(items[starred[0]], Pieces) or not all(
                isinstance(v, Tensor) for i, v in enumerate(items) if i != starred[0]):
            return None
        pieces: Pieces = items[starred[0]]  # type: ignore[assignment]
        fill = len(self.targets) - (len(elts) - 1)
        if pieces.repeat and fill >= 1:
            spread = (pieces.items[0],) * fill
        elif not pieces.repeat:
            spread = pieces.items
        else:
            return None
        i = starred[0]
        return Pieces(tuple(items[:i]) + spread + tuple(items[i + 1:]))  # type: ignore[arg-type]

    def ev_comprehension_scope(self, node: ast.AST, parts: list[Optional[ast.expr]]) -> Optional[Value]:
        saved = dict(self.env)
        for gen in node.generators:  # type: ignore[attr-defined]
            source = self.ev(gen.iter)
            for target in ast.walk(gen.target):
                if isinstance(target, ast.Name):
                    self.env[target.id] = None
            if isinstance(gen.target, ast.Name):
                self.env[gen.target.id] = _each(source)  # (f(t) for t in (q, k, v)): t is each piece
            for cond in gen.ifs:
                self.ev(cond)
        results = [self.ev(p) for p in parts]
        self.env = saved
        first = results[0]
        return Pieces((first,), repeat=True) if isinstance(first, Tensor) else None  # type: ignore[arg-type]

    def ev_ListComp(self, node: ast.ListComp) -> Optional[Value]:
        return self.ev_comprehension_scope(node, [node.elt])

    ev_GeneratorExp = ev_SetComp = ev_ListComp

    def ev_DictComp(self, node: ast.DictComp) -> Optional[Value]:
        self.ev_comprehension_scope(node, [node.value, node.key])
        return None

    def ev_Lambda(self, node: ast.Lambda) -> Optional[Value]:
        saved = dict(self.env)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.ev(default)
        self.bind_scope(node.args)
        self.ev(node.body)
        self.env = saved
        return None

    def ev_UnaryOp(self, node: ast.UnaryOp) -> Optional[Value]:
        value = self.ev(node.operand)
        return value if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(value, Tensor) else None

    def ev_BinOp(self, node: ast.BinOp) -> Optional[Value]:
        left, right = self.ev(node.left), self.ev(node.right)
        return self.binop(node, node.left, node.op, node.right, left, right)

    def binop(self, node: ast.AST, lnode: ast.expr, op: ast.operator, rnode: ast.expr,
              left: Optional[Value], right: Optional[Value]) -> Optional[Value]:
        if isinstance(op, ast.MatMult):
            left, right = self.operand(lnode, left), self.operand(rnode, right)
            self.normaliser_factors(node, (lnode, rnode), (left, right))
            out = matmul(_as_tensor(self.as_query(lnode, rnode, left)), _as_tensor(right), nm.named_query(lnode))
            return replace(out, role="normaliser") if self.position_sum(rnode) and out.role is None else out
        if isinstance(op, ast.Add) and (isinstance(left, Shape) or isinstance(right, Shape)):
            a, b = self.shape_of(lnode, left), self.shape_of(rnode, right)
            return None if a is None or b is None else Shape(a.axes + b.axes)
        if isinstance(left, Dim) and _maybe_size(right) or isinstance(right, Dim) and _maybe_size(left):
            left, right = (None if _maybe_size(v) else v for v in (left, right))  # sizes, not tensors
        elif isinstance(left, Tensor) or isinstance(right, Tensor):
            return self.tensor_arith(node, op, lnode, rnode, left, right)
        if isinstance(op, ast.Mult):
            return Dim(product(self.size_label(lnode), self.size_label(rnode)))
        if isinstance(op, (ast.FloorDiv, ast.Div)):
            return Dim(quotient(self.size_label(lnode), self.size_label(rnode)))
        return None

    def operand(self, node: ast.expr, value: Optional[Value]) -> Optional[Value]:
        """A product's operand: ``self.w`` made by ``nn.Parameter(...)`` is a learned weight nobody scaled (as a
        multiplier elsewhere, it is a learned scale and stays unknown)."""
        return Tensor() if value is None and self.is_weight(node) else value

    def as_query(self, lnode: ast.expr, rnode: ast.expr, value: Optional[Value]) -> Optional[Value]:
        """A parameter of unknown rank that is the query of ``q @ k.transpose(-1, -2)`` (or ``k.mT``) in a
        function that swaps heads and positions too (``transpose(1, 2)``) is 4-D, (batch, heads, seq, d_head),
        its axes left unnamed."""
        if not (isinstance(value, Tensor) and value.param and value.axes is None and isinstance(lnode, ast.Name)
                and _key_transposed(rnode) and self.func is not None):
            return value
        func = self.func.node
        key = f"swaps_heads:{id(func)}"
        if key not in self.memo:
            self.memo[key] = any(_is_swap(n, {1, 2}) or _is_swap(n, {2, 3}) for n in walk(func))
        if not self.memo[key]:
            return value
        query = replace(value, axes=(None,) * 4)
        self.env[lnode.id] = query
        return query

    def position_sum(self, node: ast.expr) -> bool:
        """``position_sum`` of the expression, or of the one value a local name is assigned in the function
        (``k_cumsum = k.cumsum(dim=-2)``)."""
        if isinstance(node, ast.Name) and self.func is not None:
            key = f"single_stores:{id(self.func.node)}"
            if key not in self.memo:
                counts = Counter(n.id for n in of_type(self.func.node, ast.Name)
                                 if isinstance(n.ctx, ast.Store))
                self.memo[key] = {a.targets[0].id: a.value for a in of_type(self.func.node, ast.Assign)
                                  if len(a.targets) == 1
                                  and isinstance(a.targets[0], ast.Name) and counts[a.targets[0].id] == 1}
            node = self.memo[key].get(node.id, node)  # type: ignore[union-attr]
        return position_sum(node)

    def normaliser_factors(self, node: ast.AST, nodes: Sequence[ast.expr], values: Sequence[Optional[Value]]) -> None:
        """A product with a linear-attention normaliser among its factors."""
        for sub, value in zip(nodes, values):
            if isinstance(value, Tensor) and value.role == "normaliser" and len(nodes) > 1:
                self.emit(ev.NormaliserProduct(node, sub))

    def gated(self, term: ast.expr) -> bool:
        """``old * (1 - mask)``: a tracked tensor that is no mask, multiplied by one, is a blend's term (``torch.where``
        written as arithmetic), not an additive mask, whatever the mask's name says."""
        factors = _factors(term)
        return len(factors) > 1 and any(
            "mask" not in ast.unparse(f).lower() and isinstance(self.env.get(nm.chain_root(f) or ""), Tensor)
            for f in factors)

    def tensor_arith(self, node: ast.AST, op: ast.operator, lnode: ast.expr, rnode: ast.expr,
                     left: Optional[Value], right: Optional[Value]) -> Optional[Value]:
        """Elementwise arithmetic; multiplying or dividing by a factor is a scaling."""
        inverted = isinstance(op, ast.Div) and isinstance(right, Tensor) and right.role == "normaliser" or \
            isinstance(op, ast.Pow) and isinstance(left, Tensor) and left.role == "normaliser"
        if inverted:  # ``1. / D``, ``out / D``, ``D ** -1``: what a normaliser is for
            if isinstance(left, Tensor) and left.role != "normaliser":
                return replace(left, order=None, uid=0, param=False)  # the output, normalised
            normaliser = right if isinstance(op, ast.Div) else left
            return replace(normaliser, role=None, order=None, uid=0, param=False)  # type: ignore[arg-type]
        if isinstance(op, ast.Mult) and isinstance(left, Tensor) and isinstance(right, Tensor):
            self.normaliser_factors(node, (lnode, rnode), (left, right))
        if isinstance(op, ast.Sub) and isinstance(right, Tensor) and right.role == "scores":
            # ``max(s) - s`` (DANet's channel attention): negated similarities, whose scale nobody can judge
            return replace(right, scale="unknown", scale_at=None, uid=0, param=False)
        if isinstance(op, ast.Add):
            for t, other in ((left, rnode), (right, lnode)):
                if isinstance(t, Tensor) and "mask" in ast.unparse(other).lower() and not self.gated(other):
                    self.emit(ev.MaskAdded(node, t, other))
        if isinstance(op, ast.Mult):
            for t, other in ((left, rnode), (right, lnode)):
                if isinstance(t, Tensor) and t.role == "probs":
                    text = ast.unparse(other).lower()
                    if "mask" in text and "drop" not in text:
                        self.emit(ev.MaskMultiplied(node, t, other))
        if isinstance(left, Tensor) and isinstance(right, Tensor):
            a, b = _broadcast_against(left, right), _broadcast_against(right, left)
            main = a if a.role or not b.role and (a.rank or 0) >= (b.rank or 0) else b  # a role outweighs a rank
            if isinstance(op, (ast.Mult, ast.Div)) and _factor_like(b):
                return self.scaled(node, a, rnode)
            if isinstance(op, ast.Mult) and _factor_like(a):
                return self.scaled(node, b, lnode)
            if isinstance(op, (ast.Mult, ast.Div)) and a.scale in ("unit", "cosine") and b.role is None:
                return self.scaled(node, a, rnode)  # a temperature of any shape (one per head)
            if isinstance(op, ast.Mult) and b.scale in ("unit", "cosine") and a.role is None:
                return self.scaled(node, b, lnode)
            return replace(main, order=None, uid=0, param=False)
        t, factor = (left, rnode) if isinstance(left, Tensor) else (right, lnode)
        if not isinstance(t, Tensor):
            return None
        if (right if t is left else left) is None and not self.scalar(factor):  # may be a tensor of any shape
            t = _broadcast_against(t, Tensor())
        if isinstance(op, ast.Mult) or (isinstance(op, ast.Div) and t is left):
            return self.scaled(node, t, factor)
        return replace(t, uid=0, param=False)

    def scalar(self, node: ast.expr) -> bool:
        """A plain number by its spelling: a literal, a size, ``math.sqrt(d)``, arithmetic of those."""
        if isinstance(node, ast.Constant) or isinstance(self.values.get(id(node)), Dim):
            return True
        if isinstance(node, ast.UnaryOp):
            return self.scalar(node.operand)
        if isinstance(node, ast.BinOp):
            return self.scalar(node.left) and self.scalar(node.right)
        return isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[0] in _NUMBERS \
            and all(self.scalar(a) or isinstance(a, (ast.Name, ast.Attribute)) for a in node.args)

    # ---- sizes -------------------------------------------------------------------
    def label_of(self, node: ast.AST) -> Optional[Target]:
        """The axis label an expression spells, WILD for -1."""
        value = self.values.get(id(node))
        if isinstance(value, Dim):
            return value.label
        n = nm.int_value(node)
        if n is not None:
            return WILD if n == -1 else int_label(n)
        if isinstance(node, ast.Name):
            if value is None and node.id in self.scalars:
                return self.static_label(self.scalars[node.id], 1)  # where the size came from, not its name
            return name_label(node.id) if value is None or (isinstance(value, Tensor) and value.param) else None
        if isinstance(node, ast.Attribute):
            return self.static_label(node, 0) if value is None else None
        return None

    def static_label(self, node: Optional[ast.AST], depth: int) -> Optional[Label]:
        """The label of a size expression from where it was bound: ``self.x`` from ``__init__``'s
        ``self.x = ...``, products and quotients of labels; a name that is bound nowhere is read by its name."""
        if node is None or depth > 3:
            return None
        n = nm.int_value(node)
        if n is not None:
            return int_label(n) if n > 0 else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.FloorDiv)):
            a, b = self.static_label(node.left, depth + 1), self.static_label(node.right, depth + 1)
            return product(a, b) if isinstance(node.op, ast.Mult) else quotient(a, b)
        if isinstance(node, ast.Call) and _int_cast(node):
            inner = node.args[0]
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div):
                return quotient(self.static_label(inner.left, depth + 1), self.static_label(inner.right, depth + 1))
            return self.static_label(inner, depth + 1)
        attr = nm.self_attr(node)
        if attr is not None and self.cls is not None and attr in self.cls.head_counts:
            return Label(("heads",), "heads")  # what splits the width into the head size, whatever its name
        if attr is not None and self.cls is not None and attr in self.cls.widths and name_label(attr).atoms != ("d_head",):
            return ops.WIDTH  # what the head count splits, whatever its name
        if attr is not None:
            made = self.class_attr(attr)
            if _is_sequence(made):
                return None  # a list of sizes (``self.in_split = [d] + [d] * 3``) is no one size
            if made is not None and (not isinstance(made, ast.Call) or _int_cast(made)):
                return self.static_label(made, depth + 1) or name_label(attr)  # what it holds before what it says
            return name_label(attr)
        if isinstance(node, ast.Attribute):
            return name_label(node.attr)
        if isinstance(node, ast.Name):
            if depth > 0 and self.cls is not None and node.id in self.cls.widths and name_label(node.id).atoms != ("d_head",):
                return ops.WIDTH  # __init__'s name for what the head count splits
            return name_label(node.id)
        return None

    def size_label(self, node: ast.AST) -> Optional[Label]:
        label = self.label_of(node)
        return label if isinstance(label, Label) else None

    def shape_of(self, node: ast.expr, value: Optional[Value]) -> Optional[Shape]:
        if isinstance(value, Shape):
            return value if value.known else None
        if isinstance(node, (ast.Tuple, ast.List)):
            axes = self.target_of(node.elts)
            return None if axes is None else Shape(tuple(axes))
        return None

    def target_of(self, elts: list[ast.expr]) -> Optional[list[Target]]:
        """The target axes of ``view(*elts)``; None when a starred part is unknown."""
        out: list[Target] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                inner = self.values.get(id(e.value))
                if not isinstance(inner, Shape) or not inner.known:
                    return None
                out.extend(inner.axes)
            else:
                out.append(self.label_of(e))
        return out

    # ---- calls -------------------------------------------------------------------


def _factors(node: ast.expr) -> list[ast.expr]:
    """The factors of a product: ``a * (1 - m) * c`` is [a, (1 - m), c]."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _index_shape(shape: Shape, index: ast.expr) -> Optional[Value]:
    n = len(shape.axes)
    i = nm.int_value(index)
    if i is not None:
        if not -n <= i < n:
            return None
        label = shape.axes[i]
        return Dim(label if isinstance(label, Label) else None)
    if isinstance(index, ast.Slice) and index.step is None:
        lo = 0 if index.lower is None else nm.int_value(index.lower)
        hi = n if index.upper is None else nm.int_value(index.upper)
        if lo is None or hi is None:
            return None
        return Shape(shape.axes[lo:hi])
    return None


def _is_sequence(node: Optional[ast.AST]) -> bool:
    """``[a, b]``, ``(a, b)``, ``[d] + [d] * 3``: a list or tuple, not a size."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        return _is_sequence(node.left) or _is_sequence(node.right)
    return isinstance(node, (ast.List, ast.Tuple, ast.ListComp))


def _self_size(node: ast.expr, value: Optional[Value]) -> bool:
    """``self.head_dim`` in a tuple of sizes: an attribute with no tracked value, spelling a size."""
    return value is None and nm.self_attr(node) is not None


def _index_unknown(index: ast.expr) -> Optional[Value]:
    return Dim(None) if nm.int_value(index) is not None else None





def _each(pieces: Optional[Value]) -> Optional[Tensor]:
    """What each piece of ``split``/``chunk``/a tuple of tensors is: the tensor they all agree on."""
    if not isinstance(pieces, Pieces) or not pieces.items:
        return None
    found: Optional[Value] = pieces.items[0]
    for other in pieces.items[1:]:
        found = join(found, other) if isinstance(found, Tensor) and isinstance(other, Tensor) else None
    return replace(found, uid=0) if isinstance(found, Tensor) else None



def _is_swap(node: Optional[ast.AST], dims: set[int]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose" \
        and len(node.args) == 2 and {nm.int_value(a) for a in node.args} == dims


QUARTER = re.compile(r"\*\*\s*\(?\s*-?\s*0?\.25\b|\*\*\s*\(\s*-?\s*1\s*/\s*4\s*\)|sqrt\(\s*(?:\w+\.)*sqrt\("
                     r"|\bpow\([^,()]+(?:\([^()]*\))?[^,()]*,\s*\(?\s*-?\s*(?:0?\.25|1\s*/\s*4)\s*\)?\s*\)")
# a fourth root, reciprocal or not: ``d ** -0.25``, ``d ** (1 / 4)``, ``sqrt(sqrt(d))``, ``math.pow(d, -0.25)``


def _key_transposed(node: ast.expr) -> bool:
    """``k.transpose(-1, -2)``, ``k.transpose(2, 3)`` or ``k.mT``."""
    return _is_swap(node, {-1, -2}) or _is_swap(node, {2, 3}) or (isinstance(node, ast.Attribute) and node.attr == "mT")


_NUMBERS = frozenset({"math", "float", "int", "abs", "min", "max", "round"})  # what gives a number, not a tensor


def _maybe_size(value: Optional[Value]) -> bool:
    """An unannotated argument nobody used as a tensor: next to a size it is a size too."""
    return isinstance(value, Tensor) and value.param and value.axes is None


def _broadcast_against(t: Tensor, other: Tensor) -> Tensor:
    """``t`` as an elementwise operation with ``other`` widens it: its size-1 axes take ``other``'s sizes."""
    axes = broadcast(t, other)
    return t if axes is t.axes else replace(t, axes=axes)


def _factor_like(t: Tensor) -> bool:
    """An unannotated argument, an unknown value or a 0-d tensor (``torch.full((), d)``) used as a multiplier: a
    scale, not a tensor."""
    return t.role is None and (t.axes is None or t.axes == ())


def _as_tensor(value: Optional[Value]) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(scale="unknown")



def _swap_key(t: Tensor, d0: int, d1: int) -> Tensor:
    out = swap(t, d0, d1)
    if t.rank is None:
        at_least = max(d0, d1) + 1 if min(d0, d1) >= 0 else None  # transpose(2, 3) needs 4 axes or more
        bounds = [b for b in (at_least, t.min_rank) if b is not None]
        return replace(out, key_t={d0, d1} in ({-2, -1}, {2, 3}), min_rank=max(bounds, default=None))
    return out


def _masked(t: Optional[Value], node: ast.Call, source: Optional[ast.expr], env: dict) -> Optional[Value]:
    """``source.masked_fill(...)``: the same tensor, remembering which name it came from."""
    if not isinstance(t, Tensor):
        return None
    at = (node.lineno, node.col_offset)
    if isinstance(source, ast.Name) and isinstance(env.get(source.id), Tensor):
        return replace(t, mask_at=at, mask_source=source.id, mask_uid=env[source.id].uid, uid=0, param=False)
    return replace(t, uid=0, param=False)


def _last_size_of(value: ast.expr) -> Optional[str]:
    """``q.shape[-1]`` or ``q.size(-1)``: q."""
    if isinstance(value, ast.Subscript) and nm.int_value(value.slice) == -1:
        return nm.shape_owner(value.value)
    if isinstance(value, ast.Call) and len(value.args) == 1 and nm.int_value(value.args[0]) == -1 \
            and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
            and isinstance(value.func.value, ast.Name):
        return value.func.value.id
    return None


def _reciprocal(node: ast.expr) -> bool:
    """``1 / sqrt(x)``, ``x ** -0.5``, ``rsqrt(x)``: a root that divides (``root_base`` finds its x either way)."""
    node = _unchained(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return isinstance(node.right, ast.UnaryOp) and isinstance(node.right.op, ast.USub)
    return isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] == "rsqrt"


def _unchained(node: ast.expr) -> ast.expr:
    """``torch.sqrt(t).to(dtype)``, ``math.sqrt(d).item()``: the value before casts."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS:
        node = node.func.value
    return node


_CASTS = frozenset({"to", "item", "float", "half", "double", "type", "type_as", "cuda", "cpu"})


def root_base(node: ast.expr) -> Optional[ast.expr]:
    """``x`` of ``x ** 0.5``, ``x ** -0.5``, ``math.sqrt(x)``, ``torch.sqrt(torch.tensor(x))``,
    ``np.power(x, 0.5)``, ``rsqrt(x)`` and ``1 / (any of those)``: one scale however it is spelled (``float(x)`` and
    casts such as ``.to(dtype)`` unwrapped)."""
    base = None
    node = _unchained(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.left, ast.Constant) \
            and node.left.value == 1:
        return root_base(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        power = _folded(node.right)
        base = node.left if power is not None and abs(power) == 0.5 else None
    elif isinstance(node, ast.Call) and len(node.args) == 1 and (nm.dotted(node.func) or "").split(".")[-1] in ("sqrt", "rsqrt"):
        base = node.args[0]
    elif isinstance(node, ast.Call) and len(node.args) == 2 and (nm.dotted(node.func) or "").split(".")[-1] == "power" \
            and isinstance(node.args[1], ast.Constant) and node.args[1].value == 0.5:
        base = node.args[0]
    while isinstance(base, ast.Call) and (nm.dotted(base.func) or "").split(".")[-1] in ("float", "int", "tensor") \
            and len(base.args) == 1:
        base = base.args[0]
    return base


def _folded(node: ast.expr) -> Optional[float]:
    """The number a constant expression spells: ``0.5``, ``-0.5``, ``(1 / 2)``, ``-(1.0 / 2)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _folded(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or not right else left / right
    return None


def _int_cast(node: ast.Call) -> bool:
    """``int(x)``: the size ``x`` is (``self.dim = int(hidden_dim / num_heads)`` holds a head size, whatever its name)."""
    return nm.dotted(node.func) == "int" and len(node.args) == 1


def _passed_kind(tree: ast.Module, name: str, position: int, param: str) -> Optional[str]:
    """What the module's constructions ``name(...)`` pass for a parameter, read in the constructing class."""
    kinds: set[Optional[str]] = set()
    for outer in tree.body:
        if not isinstance(outer, ast.ClassDef):
            continue
        calls = [c for c in walk(outer) if isinstance(c, ast.Call) and nm.dotted(c.func) == name]
        if not calls:
            continue
        caller = class_info(outer)
        for call in calls:
            arg = nm.argument(call, position, param)
            kinds.add(_caller_kind(arg, caller) if arg is not None else None)
    return kinds.pop() if len(kinds) == 1 else None


def _caller_kind(arg: ast.expr, caller: ClassInfo) -> Optional[str]:
    base = root_base(arg)
    if base is None:
        return None
    if is_head_count(base, caller):
        return "heads"
    spelled = base.id if isinstance(base, ast.Name) else nm.self_attr(base)
    if spelled is not None and (spelled in caller.widths or caller.multi_head and canonical(spelled) == "d_model"):
        return "width"
    return None


def position_sum(node: ast.expr) -> bool:
    """``k.sum(dim=-2)``, ``k.cumsum(dim=-2)``, ``torch.sum(k, dim=1)`` (through ``unsqueeze``/``[..., None]``): a
    tensor summed over an axis other than the last (the features stay): the keys summed over the positions."""
    while isinstance(node, ast.Subscript) or isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("unsqueeze", "transpose", "float"):
        node = node.value if isinstance(node, ast.Subscript) else node.func.value  # type: ignore[attr-defined]
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("sum", "cumsum")):
        return False
    namespace = nm.is_namespace(node.func.value)
    dim = nm.argument(node, 1 if namespace else 0, "dim")
    value = nm.int_value(dim) if dim is not None else None
    return value is not None and value != -1
