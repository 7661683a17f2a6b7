"""Calls: what torch, F, einops, methods of tensors and submodules do to tracked tensors.

``Calls`` extends the expression evaluator with ``ev_Call``: namespace functions
(``torch.matmul``, ``F.softmax``, SDPA, ``einsum``), tensor methods (``view``,
``transpose``, ``unbind``, ...), submodules (``self.q_proj(x)``) and plain names
(einops functions, ``map``). The checker extends it to follow the file's own helpers.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import names as nm
from shapecheck.lint import ops
from shapecheck.lint.evaluate import Evaluator, _as_tensor, _each, _swap_key
from shapecheck.vocabulary import SEQUENCE_AXES
from shapecheck.lint.tracking import (
    WILD, Dim, Label, Pieces, Shape, Target, Tensor, Value, fresh, int_label, matmul, permute, quotient, replace,
)


_RESHAPE = frozenset({"view", "reshape"})
_SWAP = frozenset({"transpose", "swapaxes", "swapdims"})
_TENSOR_ONLY = _RESHAPE | _SWAP | {"permute", "contiguous", "softmax", "log_softmax", "masked_fill", "masked_fill_",
                                   "matmul"}
_NEW_AXES = frozenset({"unsqueeze", "squeeze", "expand", "expand_as", "unflatten", "repeat",
                       "repeat_interleave", "sum", "mean", "max", "min", "amax", "gather", "index_select"})
_AXIS_OPS = frozenset({"unbind", "select", "flatten", "movedim", "moveaxis"})
_CAT = frozenset({"cat", "concat", "concatenate"})
_EINOPS = frozenset({"rearrange", "repeat", "reduce"})
_ROTARY = re.compile(r"rotary|rope|apply_rot|rotate_queries", re.I)
_SEQ_AXIS = frozenset({"seq_dim", "seq_axis", "sequence_dim"})
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "randn", "rand", "randint"})
_LIKE = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "randn_like", "rand_like"})
_KEEPS_NORMALISER = frozenset({"unsqueeze", "squeeze", "expand", "expand_as", "view", "reshape", "clamp", "clamp_min",
                               "type_as", "to", "float", "half", "contiguous"})
_SAME_SHAPE_HELPER = re.compile(r"mask|bias|rot|rope|alibi|softcap|soft_cap", re.I)
_WATCHED = frozenset({"get", "setdefault", "pop", "getattr", "index_copy", "index_copy_", "index_put", "index_put_",
                      "expand_as", "expand", "broadcast_to", "rearrange", "repeat", "unsqueeze", "ModuleList",
                      "Sequential"})  # ev.NamedCall


class Calls(Evaluator):
    """Expression evaluation with calls; the checker adds the statements."""

    def ev_Call(self, node: ast.Call) -> Optional[Value]:
        found = self.call(node)
        if found is None and node.args and isinstance(node.args[0], ast.Name) and self.targets == (node.args[0].id,):
            first = self.values.get(id(node.args[0]))
            if isinstance(first, Tensor) and first.role == "scores":
                # ``attn = self.rel_pos(attn, ...)``: a call nobody models whose result replaces the scores it was
                # given (a bias, a relative position term) is taken to be those scores
                return replace(first, uid=0, param=False)
        if found is None:
            return self.same_names_back(node)
        return found

    def same_names_back(self, node: ast.Call) -> Optional[Value]:
        """``q, k, v = self.pos_embed(q, k, v)``: a call nobody models whose results are stored back under the very
        names it was given, in their order (a rotary or positional embedding, a norm of each), keeps each layout."""
        names = tuple(a.id for a in node.args if isinstance(a, ast.Name))
        if len(self.targets) < 2 or names != self.targets or len(node.args) != len(names):
            return None
        given = [self.values.get(id(a)) for a in node.args]
        if not all(isinstance(v, Tensor) for v in given):
            return None
        return Pieces(tuple(replace(v, uid=0, param=False) for v in given))  # type: ignore[arg-type]

    def call(self, node: ast.Call) -> Optional[Value]:
        func = node.func
        if self.func is not None:  # what each function calls, for the checks that read a whole body
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            self.callees.setdefault(id(self.func.node), set()).add(called)
        name = nm.dotted(func)  # spelled once: the layer and the namespace are read from it
        layer = nm.nn_layer_name(name)
        if layer is not None:
            self.emit(ev.Construct(node, layer))
        if isinstance(func, ast.Attribute) and name is not None and nm.is_namespace_name(name.rpartition(".")[0]):
            self.ev(func.value)
            args = [self.ev(a) for a in node.args]
            for kw in node.keywords:
                self.ev(kw.value)
            if func.attr in _WATCHED:
                self.emit(ev.NamedCall(node, func.attr))
            return self.namespace_call(node, func.attr, args)
        self.ev(func)  # evaluates the receiver; a method reference has no value itself
        args = [self.ev(a) for a in node.args]
        for kw in node.keywords:
            self.ev(kw.value)
        if self.func is not None and _ROTARY.search(called) and "norm" not in called.lower():
            self.rotary(node, args)
        if self.func is not None and (called in _WATCHED or len(node.args) >= 2 and (
                isinstance(func, ast.Name) or nm.self_attr(func) is not None)
                and sum(isinstance(a, ast.Name) for a in node.args) >= 2
                or isinstance(func, ast.Name) and called in getattr(self, "classes", ())):  # a class of the file built
            self.emit(ev.NamedCall(node, called))
        if len(node.args) + len(node.keywords) > 1 and isinstance(node.args[0] if node.args else None, ast.Name):
            first = node.args[0].id  # type: ignore[union-attr]
            for given in [*node.args[1:], *(kw.value for kw in node.keywords)]:
                if isinstance(given, ast.Attribute) and given.attr == "dtype" and isinstance(given.value, ast.Name) \
                        and given.value.id == first:
                    self.emit(ev.OwnDtype(node, given))
        if self.func is not None:
            for kw in node.keywords:
                if kw.arg in self.func.params and not (isinstance(kw.value, ast.Name) and kw.value.id == kw.arg):
                    self.emit(ev.OwnParameterKeyword(node, kw))
        if isinstance(func, ast.Attribute) and func.attr in nm.FUSED_ATTENTION and not self.own_method(func):
            # ``self.flash_attn_func`` too, unless the class defines that method itself: then it is the class's code
            return self.fused_attention(node, nm.dotted(func) or func.attr, func.attr, args)  # xops.memory_efficient_...
        if isinstance(func, ast.Attribute):
            base = self.values.get(id(func.value))
            if nm.self_attr(func) is not None:
                return self.module_call(node, func.attr, args)
            if base is None and func.attr in _TENSOR_ONLY:
                base = Tensor(scale="unknown")
            if isinstance(base, (Tensor, Shape)):
                found = self.method_call(node, func.attr, base, args)
                if found is None and isinstance(base, Tensor) and not base.param:
                    self.emit(ev.TensorMethod(node, func.attr))
                if found is None and isinstance(base, Tensor) and base.param and base.axes is None:
                    return self.submodule_call(func.attr, None, args)  # ``attn.to_q(x)``: the module passed in
                return found
            return None
        if isinstance(func, ast.Name):
            return self.name_call(node, func.id, args)
        if isinstance(func, ast.Call) and (nm.dotted(func.func) or "").endswith("Softmax"):
            first = node.args[0] if node.args else None
            return self.softmax(node, first, args[0] if args else None, nm.argument(func, 0, "dim"),
                                   bool(func.args or func.keywords))
        return None

    def rotary(self, node: ast.Call, args: list[Optional[Value]]) -> None:
        """A rotary call given the heads axis as its positions: a size of it, or a ``seq_dim=`` pointing at it."""
        heads_atoms = ("heads",)
        given = [*node.args, *(kw.value for kw in node.keywords if kw.arg not in _SEQ_AXIS)]
        sizes = [sub for arg in given for sub in ast.walk(arg) if isinstance(sub, (ast.Name, ast.Subscript, ast.Call))]
        heads = tuple(sub for sub in sizes if _sized(self.values.get(id(sub)), heads_atoms))
        if any(_sized(self.values.get(id(sub)), (seq,)) for sub in sizes for seq in SEQUENCE_AXES):
            heads = ()  # every size spelled out (a kernel given batch, heads, seq, d): the positions are the seq's
        axis = None
        for kw in node.keywords:
            first = args[0] if args else None
            if kw.arg in _SEQ_AXIS and isinstance(kw.value, (ast.Constant, ast.UnaryOp)) and isinstance(first, Tensor) \
                    and first.axes is not None:
                at = nm.int_value(kw.value)
                if at is not None and -len(first.axes) <= at < len(first.axes) \
                        and first.axes[at] is not None and first.axes[at].atoms == heads_atoms:
                    axis = kw.value
        if heads or axis is not None:
            self.emit(ev.Rotary(node, heads[:1], axis))

    def fused_attention(self, node: ast.Call, shown: str, attr: str, args: list[Optional[Value]]) -> Tensor:
        """SDPA and flash-attn: the output has q's shape with v's last axis."""
        q, k, v = args[:3] if len(args) >= 3 else (None, None, None)
        scale = nm.fused_scale(node)
        self.emit(ev.FusedAttention(node, shown, nm.argument(node, nm.FUSED_ATTENTION[attr],
                                                                nm.FUSED_DROPOUT_KEYWORD.get(attr, "dropout_p")), scale,
                                    q if isinstance(q, Tensor) else None, k if isinstance(k, Tensor) else None))
        if isinstance(q, Tensor) and isinstance(v, Tensor) and q.axes and v.axes and len(q.axes) == len(v.axes):
            return Tensor(axes=q.axes[:-1] + v.axes[-1:])  # memory order depends on the backend
        return Tensor(scale="unknown")

    def einsum(self, node: ast.Call, args: list[Optional[Value]]) -> Tensor:
        """torch's ``einsum(equation, *operands)`` or einops' ``einsum(*operands, pattern)``."""
        texts = [i for i, a in enumerate(node.args) if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(texts) != 1 or texts[0] not in (0, len(node.args) - 1):
            return Tensor(scale="unknown")
        i = texts[0]
        nodes = [n for j, n in enumerate(node.args) if j != i]
        values = [v for j, v in enumerate(args) if j != i]
        if i == 0 and len(nodes) == 1 and isinstance(nodes[0], (ast.List, ast.Tuple)):
            nodes = list(nodes[0].elts)  # torch's older einsum(equation, [a, b])
            values = [self.values.get(id(n)) for n in nodes]
        operands = [a if isinstance(a, Tensor) else None for a in (self.operand(n, v) for n, v in zip(nodes, values))]
        if any(t is None or t.param for t in operands):  # scaled or not, somewhere else
            operands = [replace(t, scale="unknown") if t is not None else None for t in operands]
        equation = node.args[i].value  # type: ignore[attr-defined]
        if i != 0:  # einops: named axes separated by spaces
            names: dict[str, str] = {}
            equation = re.sub(r"[A-Za-z_]\w*", lambda m: names.setdefault(m.group(0), chr(97 + len(names) % 26)),
                              equation).replace(" ", "")
        self.normaliser_factors(node, nodes, [self.values.get(id(n)) for n in nodes])
        out = ops.einsum(equation, operands)
        if out.role is None and ops.contracts_features(equation) and any(self.position_sum(n) for n in nodes[1:2]):
            return replace(out, role="normaliser")  # einsum('...nd,...d->...n', q, k.sum(dim=-2)): q·Σk
        return out

    def einops_call(self, node: ast.Call, args: list[Optional[Value]]) -> Tensor:
        pattern = node.args[1] if len(node.args) >= 2 else nm.keyword(node, "pattern")
        if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
            return Tensor(scale="unknown")
        sizes = {kw.arg: self.size_label(kw.value) for kw in node.keywords if kw.arg}
        first = args[0] if args and isinstance(args[0], Tensor) else None
        return ops.einops(pattern.value, first, sizes)

    def map_lambda(self, fn: ast.Lambda, pieces: Optional[Value]) -> Optional[Value]:
        """``map(lambda t: rearrange(t, ...), qkv)``: the lambda's body with ``t`` bound to each piece."""
        params = fn.args.args
        item = _each(pieces)
        if len(params) != 1 or item is None:
            return None
        saved = dict(self.env)
        self.env[params[0].arg] = item
        result = self.ev(fn.body)
        self.env = saved
        return Pieces((result,), repeat=True) if isinstance(result, Tensor) else None

    def map_module(self, attr: str, pieces: Optional[Value]) -> Optional[Value]:
        """``map(self.split_heads, (q, k, v))``: the submodule applied to each piece."""
        if not isinstance(pieces, Pieces) or pieces.repeat:
            return None
        kind, made = self.module_of(attr)
        found = [self.submodule_call(attr, made, [item], kind) for item in pieces.items]
        return Pieces(tuple(found)) if all(isinstance(t, Tensor) for t in found) else None  # type: ignore[arg-type]

    def same_shape_helper(self, node: ast.Call, name: str, args: list[Optional[Value]]) -> Optional[Tensor]:
        """``attn = maybe_add_mask(attn, mask)``: an unknown helper named for masks, biases or rotary
        embeddings whose result replaces its first argument keeps that tensor's axes and role."""
        first = args[0] if args else None
        if not (isinstance(first, Tensor) and _SAME_SHAPE_HELPER.search(name) and len(self.targets) == 1
                and isinstance(node.args[0], ast.Name) and node.args[0].id == self.targets[0]):
            return None
        return replace(first, uid=0, param=False)

    def name_call(self, node: ast.Call, name: str, args: list[Optional[Value]]) -> Optional[Value]:
        if name == "map" and len(node.args) == 2 and isinstance(node.args[0], ast.Lambda) and name not in self.env:
            return self.map_lambda(node.args[0], args[1])
        if name == "map" and len(node.args) == 2 and nm.self_attr(node.args[0]) and name not in self.env:
            return self.map_module(nm.self_attr(node.args[0]), args[1])  # type: ignore[arg-type]
        if name == "einsum" and name not in self.env:
            return self.einsum(node, args)
        if self.einops_names.get(name) in _EINOPS and name not in self.env:
            return self.einops_call(node, args)
        kept = self.same_shape_helper(node, name, args)
        if kept is not None:
            return kept
        fused = self.functional.get(name, name if name.startswith("flash_attn") else None)
        if fused in nm.FUSED_ATTENTION and name not in self.env:
            return self.fused_attention(node, name, fused, args)
        original = self.functional.get(name)
        if original in nm.ACTIVATIONS and name not in self.env and args and isinstance(args[0], Tensor):
            return _activated(args[0])  # ``from torch.nn.functional import relu``
        if original in nm.DROPOUT and name not in self.env:
            self.emit(ev.FunctionalDropout(node, name if name == original else f"{name} (torch.nn.functional.{original})"))
        if name == "int" and args and isinstance(args[0], Dim):
            return args[0]
        if nm.module_kind(name) == "all" and args and isinstance(args[0], Tensor):
            return args[0]
        return None

    def own_method(self, func: ast.Attribute) -> bool:
        """``self.name`` where the class's body defines ``name``: its own code, whatever the name says."""
        return nm.self_attr(func) is not None and self.cls is not None and func.attr in self.cls.defines

    def module_call(self, node: ast.Call, attr: str, args: list[Optional[Value]]) -> Optional[Value]:
        """``self.attr(x)``: a submodule or a method of this class."""
        kind, made = self.module_of(attr)
        first = args[0] if args else (self.values.get(id(node.keywords[0].value)) if node.keywords else None)
        if kind == "softmax" and made is not None:
            x = node.args[0] if node.args else None
            return self.softmax(node, x, first, nm.argument(made, 0, "dim"), bool(made.args or made.keywords))
        width = nm.argument(made, 1, "out_features") if made is not None else None
        if not isinstance(first, Tensor) and kind == "lead" and (node.args or node.keywords) \
                and (width is None or nm.int_value(width) is None):
            # a projection of an untracked input to the model's width (not a literal few features, such as a
            # scalar q/k/v): its output is fresh, scaled by nobody yet
            first = Tensor()
        if not isinstance(first, Tensor):
            return None
        if kind == "lead" and made is not None and _split_into_heads(first):
            features = self.static_label(nm.argument(made, 0, "in_features"), 0)
            if features == ops.D_HEAD and self.static_label(nm.argument(made, 1, "out_features"), 0) == features:
                self.emit(ev.ProjectedPerHead(node, attr, made))  # nn.Linear(d_head, d_head), not a per-head gate
        return self.submodule_call(attr, made, [first], kind)

    def submodule_call(self, attr: str, made: Optional[ast.Call], args: list[Optional[Value]],
                       kind: Optional[str] = None) -> Optional[Value]:
        """A submodule applied to a tensor, by what made it (``made``) or else by its name."""
        first = args[0] if args else None
        kind = kind or nm.module_kind(attr)
        if not isinstance(first, Tensor):
            return None
        if kind == "einops" and made is not None and made.args and isinstance(made.args[0], ast.Constant):
            sizes = {kw.arg: self.static_label(kw.value, 0) for kw in made.keywords if kw.arg}
            return ops.einops(str(made.args[0].value), first, sizes)
        if kind == "all":
            # a LayerNorm/RMSNorm of q or k keeps each vector's length near sqrt(d_head) (its gain starts at 1):
            # the scores still need 1/sqrt(d_head); only unit vectors (``F.normalize``, in a norm class of this
            # file too) set their own temperature
            unit = self.unit_norm_class((nm.dotted(made.func) or "").split(".")[-1]) if made is not None else None
            return replace(first, uid=0, param=False, scale=unit or first.scale)
        if kind == "conv":  # features on axis 1, the spatial axes resized: a fresh tensor, scaled by nobody
            return replace(first, uid=0, param=False) if made is not None and _in_place_layer(made, "channels") else Tensor()
        if kind == "lead" and first.role == "scores" and made is not None and _in_place_layer(made, "features"):
            return replace(first, uid=0, param=False)  # talking heads: nn.Linear(heads, heads) mixes the heads
        if kind == "lead" and first.axes:
            width = self.static_label(nm.argument(made, 1, "out_features"), 0) if made is not None else None
            return Tensor(axes=first.axes[:-1] + (width,), order=tuple(range(len(first.axes))))
        if kind != "lead":
            return None
        callee = (nm.dotted(made.func) or "") if made is not None else ""
        return Tensor(projected=not re.search(r"[Cc]onv(?!1D)", callee))  # a convolution's features lead

    def unit_norm_class(self, name: str) -> Optional[str]:
        """For a class of this module whose code normalises to unit length (``F.normalize``, ``l2norm``): "unit"
        when its ``forward`` returns the unit vectors as they are, "unknown" when it rescales them (a learned
        gain: the temperature is learned); None for any other class."""
        key = f"unit_norm:{name}"
        if key not in self.memo:
            found = [c for c in self.tree.body if isinstance(c, ast.ClassDef) and c.name == name]
            normalises = any(isinstance(n, ast.Call) and _UNIT.search(nm.dotted(n.func) or "")
                             for c in found for n in ast.walk(c))
            self.memo[key] = ("unit" if all(_returns_unit(c) for c in found) else "unknown") if normalises else None
        return self.memo[key]  # type: ignore[return-value]

    def namespace_call(self, node: ast.Call, attr: str, args: list[Optional[Value]]) -> Optional[Value]:
        """``torch.matmul(a, b)``, ``F.softmax(x, dim=-1)``, ``F.dropout(x, p)``, ..."""
        first = args[0] if args else None
        if attr in nm.FUSED_ATTENTION:
            return self.fused_attention(node, nm.dotted(node.func) or attr, attr, args)
        if attr == "einsum":
            return self.einsum(node, args)
        if attr == "where" and len(args) == 3 and isinstance(args[1], Tensor) and args[1].role == "scores" \
                and args[1].scale != "unknown" and not isinstance(args[2], Tensor):
            # where(causal_mask, scores, min_value): the scores, masked; unscaled scores here are GPT-Neo's by
            # design, so their lack of scaling is not claimed ("other"), any other scale stays what it was
            scale = "other" if args[1].scale == "none" else args[1].scale
            return replace(args[1], uid=0, param=False, scale=scale)
        if attr in nm.ACTIVATIONS and isinstance(first, Tensor):
            return _activated(first)
        if attr in nm.SAME_SHAPE_FUNCTIONS and attr != "where" and isinstance(first, Tensor):
            if attr == "normalize":  # unit vectors along the features (cosine attention), no longer scores
                dim = nm.int_value(nm.argument(node, 2, "dim") or ast.Constant(1))
                unit = dim == -1 or (dim is not None and first.rank is not None and dim == first.rank - 1)
                return replace(first, role=None, key_pos=None, key_t=False, uid=0, param=False,
                               scale="unit" if unit else "unknown")
            return replace(first, uid=0, param=False)  # tanh soft-capping, clamp: the scores stay the scores
        if attr == "linear" and isinstance(first, Tensor):  # F.linear(x, weight, bias): the leading axes stay
            return Tensor(axes=first.axes[:-1] + (None,), order=tuple(range(len(first.axes)))) if first.axes \
                else Tensor()
        if attr in _CAT and isinstance(first, Pieces) and not first.repeat:
            dim = nm.int_value(nm.argument(node, 1, "dim") or ast.Constant(0))
            return ops.cat(first.items, dim) if first.items and dim is not None else Tensor()
        if isinstance(first, Tensor) and attr in _AXIS_OPS:
            return self.axis_op(node, attr, first, node.args[1:])
        if attr in ("matmul", "bmm") and len(args) >= 2:
            return self.product(node, attr, node.args[0], node.args[1], first, args[1])
        if attr == "baddbmm" and len(args) >= 3:  # baddbmm(input, a, b, beta=, alpha=): input·beta + alpha·(a @ b)
            out = self.product(node, attr, node.args[1], node.args[2], args[1], args[2])
            alpha = nm.keyword(node, "alpha")
            return out if alpha is None or nm.int_value(alpha) == 1 else self.scaled(node, out, alpha)
        if attr in nm.SOFTMAX:
            return self.softmax(node, node.args[0] if node.args else None, first,
                                   nm.argument(node, 1, "dim"), len(node.args) > 1 or bool(node.keywords))
        if attr in nm.DROPOUT:
            self.emit(ev.FunctionalDropout(node, nm.dotted(node.func) or attr))
            return replace(first, uid=0, param=False) if isinstance(first, Tensor) else None
        if attr == "masked_fill":
            return self.masked_fill(node, node.args[0] if node.args else None, first, nm.argument(node, 1, "mask"),
                                    nm.argument(node, 2, "value"))
        if isinstance(first, Tensor) and attr in ("split", "chunk"):
            return self.size_or_split(node, attr, first, offset=1)
        if isinstance(first, Tensor) and attr in _RESHAPE | _SWAP | {"permute"}:
            return self.method_call(node, attr, first, args[1:], offset=1)
        if attr in _FACTORIES:
            return self.allocated(node.args[:1] if attr in ("full", "randint") else node.args)
        if attr in _LIKE and isinstance(first, Tensor):
            return fresh(first.axes) if first.axes is not None else Tensor(min_rank=first.min_rank)
        return None

    def allocated(self, arg_nodes: list[ast.expr]) -> Tensor:
        """``torch.zeros(B, H, T, D)``, ``torch.full((b, t, t), -inf)``, ``x.new_zeros(shape)``: a fresh tensor
        whose axes are the sizes it was given (unnamed where a size has no provenance); unknown when a size is a
        shape nobody tracked."""
        target = self.size_target(arg_nodes)
        if target is None or any(t is WILD for t in target):
            return Tensor()
        return fresh([t if isinstance(t, Label) else None for t in target])

    def size_target(self, arg_nodes: list[ast.expr]) -> Optional[list[Target]]:
        """The sizes ``view(*args)`` or ``zeros(*args)`` spell: one tuple, list or shape, or the arguments."""
        if len(arg_nodes) == 1 and not isinstance(arg_nodes[0], ast.Starred):
            only = arg_nodes[0]
            value = self.values.get(id(only))
            if isinstance(value, Shape):
                return list(value.axes) if value.known else None
            if isinstance(only, (ast.Tuple, ast.List)):
                return self.target_of(only.elts)
            if value is None and nm.int_value(only) is None:
                return None  # a shape nobody tracked, not a 1-D size
        return self.target_of(arg_nodes)

    def product(self, node: ast.Call, attr: str, a_node: ast.expr, b_node: ast.expr, a: Optional[Value],
                b: Optional[Value]) -> Tensor:
        """``matmul``/``bmm``/``baddbmm`` of two operands; a batched product (``bmm``) is 3-D."""
        a, second = self.operand(a_node, a), _as_tensor(self.operand(b_node, b))
        if attr != "matmul" and _is_transpose(b_node, (1, 2)):
            second = replace(second, key_t=True)
        out = matmul(_as_tensor(self.as_query(a_node, b_node, a)), second, nm.named_query(a_node))
        if attr != "matmul" and out.axes is None:
            out = replace(out, axes=(None,) * 3, min_rank=None, key_pos=2 if out.role == "scores" else None)
        return out

    def method_call(self, node: ast.Call, attr: str, base: Value, args: list[Optional[Value]],
                    offset: int = 0) -> Optional[Value]:
        if not isinstance(base, Tensor):
            return None
        attr = nm.out_of_place(attr)  # in place or not: the same value
        if base.role == "normaliser" and attr in _KEEPS_NORMALISER:  # D.unsqueeze(-1), D.clamp(min=eps)
            return replace(base, axes=None, order=None, uid=0, param=False)
        arg_nodes = node.args[offset:]
        if attr in _RESHAPE:
            return self.reshape(node, attr, base, arg_nodes)
        if attr in _SWAP and len(arg_nodes) == 2:
            dims = [nm.int_value(a) for a in arg_nodes]
            return Tensor(scale=base.scale) if None in dims else _swap_key(base, dims[0], dims[1])  # type: ignore[arg-type]
        if attr == "permute":
            elts = arg_nodes[0].elts if len(arg_nodes) == 1 and isinstance(arg_nodes[0], (ast.Tuple, ast.List)) \
                else arg_nodes
            dims = [nm.int_value(a) for a in elts]
            return Tensor(scale=base.scale) if None in dims else permute(base, dims)  # type: ignore[arg-type]
        if attr == "contiguous":
            order = None if base.rank is None else tuple(range(base.rank))
            return replace(base, order=order, uid=0, param=False)
        if attr == "matmul" and args:
            return matmul(base, _as_tensor(args[0]), nm.named_query(node.func.value))  # type: ignore[attr-defined]
        if attr in nm.SOFTMAX:
            return self.softmax(node, node.func.value, base, nm.argument(node, 0, "dim"),  # type: ignore[attr-defined]
                                   bool(node.args or node.keywords))
        if attr == "masked_fill":
            return self.masked_fill(node, node.func.value, base, nm.argument(node, 0, "mask"),  # type: ignore[attr-defined]
                                    nm.argument(node, 1, "value"))
        if attr in ("mul", "div") and node.args:  # the twins of ``*`` and ``/``
            op = ast.Mult() if attr == "mul" else ast.Div()
            return self.binop(node, node.func.value, op, node.args[0], base, args[0] if args else None)  # type: ignore[attr-defined]
        if attr in ("size", "dim") or attr in ("split", "chunk"):
            return self.size_or_split(node, attr, base)
        if attr in _AXIS_OPS:
            return self.axis_op(node, attr, base, arg_nodes)
        if attr in ("repeat_interleave", "unsqueeze") and base.axes is not None:
            return _resized(node, attr, base)
        if attr in nm.ACTIVATIONS:
            return _activated(base)
        if attr in nm.SAME_LAYOUT:
            return replace(base, uid=0, param=False)
        if attr in _NEW_AXES:
            return Tensor(scale=base.scale, scale_at=base.scale_at)
        if attr.startswith("new_") and attr[4:] in _FACTORIES:  # x.new_zeros(b, t): sizes, x gives only dtype
            return self.allocated(arg_nodes[:1] if attr == "new_full" else arg_nodes)
        return None

    def axis_op(self, node: ast.Call, attr: str, base: Tensor, arg_nodes: list[ast.expr]) -> Optional[Value]:
        """unbind, select, flatten, movedim: axes dropped, merged or moved."""
        def int_arg(position: int, name: str, default: Optional[int]) -> Optional[int]:
            found = nm.argument(node, position + len(node.args) - len(arg_nodes), name)
            return default if found is None else nm.int_value(found)

        if attr in ("unbind", "select"):
            dim = int_arg(0, "dim", 0)
            if dim is None:
                return Tensor()
            piece = ops.drop_axis(base, dim)
            if dim == -1 or base.rank is not None and dim == base.rank - 1:
                # ``q, k, v = qkv.unbind(-1)``: the features axis is gone, so a product of the pieces is no dot
                # product of head vectors and 1/sqrt(d_head) says nothing about it
                piece = replace(piece, scale="unknown", scale_at=None)
            return Pieces((piece,), repeat=True) if attr == "unbind" else piece
        if attr == "flatten":
            start, end = int_arg(0, "start_dim", 0), int_arg(1, "end_dim", -1)
            return Tensor() if start is None or end is None else ops.flatten(base, start, end)
        src, dst = int_arg(0, "source", None), int_arg(1, "destination", None)
        perm = None if src is None or dst is None else ops.movedim(base, src, dst)
        return Tensor(scale=base.scale) if perm is None else permute(base, perm)

    def size_or_split(self, node: ast.Call, attr: str, base: Tensor, offset: int = 0) -> Optional[Value]:
        """``x.size(i)``; ``x.split(n, dim)``/``x.chunk(n, dim)`` (``torch.split(x, n, dim)`` with ``offset`` 1)."""
        if attr == "size":
            if not node.args:
                return Shape((), _owner(node), known=False) if base.axes is None else Shape(base.axes, _owner(node))
            i = nm.int_value(node.args[0])
            owner = _owner(node)
            return Dim(_axis(base, i), axis_of=(owner, i) if owner is not None and i is not None else None)
        if attr in ("split", "chunk") and len(node.args) > offset:
            dim = nm.int_value(nm.argument(node, 1 + offset, "dim") or ast.Constant(0))
            axis = _axis(base, dim)
            count = node.args[offset]
            size = self.label_of(count) if attr == "split" else quotient(axis, _int(count))
            axes = None
            if base.axes is not None and dim is not None and -len(base.axes) <= dim < len(base.axes):
                axes = list(base.axes)
                axes[dim] = size if isinstance(size, Label) else None
            # pieces of a projection's features are features too (of unknown rank, packed q/k/v lie past dim 1)
            features = base.projected and dim is not None and (dim == -1 or dim >= 2)
            return Pieces((Tensor(axes=None if axes is None else tuple(axes), scale=base.scale, projected=features),),
                          repeat=True)
        return None

    def reshape(self, node: ast.Call, kind: str, base: Tensor, arg_nodes: list[ast.expr]) -> Tensor:
        if len(arg_nodes) == 1 and not isinstance(arg_nodes[0], ast.Starred):
            only = arg_nodes[0]
            value = self.values.get(id(only))
            if isinstance(value, Shape):
                target: Optional[list[Target]] = list(value.axes) if value.known else None
            elif isinstance(only, (ast.Tuple, ast.List)):
                target = self.target_of(only.elts)
            elif isinstance(only, ast.Attribute) and nm.dotted(only) and nm.dotted(only).startswith("torch."):  # type: ignore[union-attr]
                return Tensor()  # view(torch.float16): a dtype view
            elif value is None and nm.int_value(only) is None:
                target = None  # view(hidden_shape) of a shape nobody tracked: not a 1-D view
            else:
                target = self.target_of(arg_nodes)
        else:
            target = self.target_of(arg_nodes)
        if target is not None:
            target = ops.resolve_wild(base.axes, target)
        self.emit(ev.Reshape(node, kind, base, target))
        if target is None:
            return Tensor(scale=base.scale, scale_at=base.scale_at, role="probs" if base.role == "probs" else None)
        axes = [t if isinstance(t, Label) else None for t in target]
        role = "probs" if base.role == "probs" else None  # a reshape keeps probabilities, not the key axis
        src = base.axes or ()
        if base.role == "scores" and base.key_pos in (len(src) - 1, -1) and len(axes) >= 2 \
                and (None not in src[-2:] and tuple(axes[-2:]) == src[-2:] or _square(arg_nodes)):
            # scores viewed with their (query, key) axes kept last, by name or as a square ``(..., N, N)``:
            # windows or heads split off the leading axes
            return Tensor(axes=tuple(axes), order=tuple(range(len(axes))), scale=base.scale, scale_at=base.scale_at,
                          role="scores", key_pos=len(axes) - 1)
        return Tensor(axes=tuple(axes), order=tuple(range(len(axes))), scale=base.scale, scale_at=base.scale_at,
                      role=role)


def _sized(value: Optional[Value], atoms: tuple[str, ...]) -> bool:
    """Whether ``value`` is the size of an axis labelled exactly ``atoms``."""
    return isinstance(value, Dim) and value.label is not None and value.label.atoms == atoms


def _axis(t: Tensor, i: Optional[int]) -> Optional[Label]:
    if t.axes is None or i is None or not -len(t.axes) <= i < len(t.axes):
        return None
    return t.axes[i]


def _int(node: ast.expr) -> Optional[Label]:
    n = nm.int_value(node)
    return None if n is None else int_label(n)


def _owner(node: ast.Call) -> Optional[str]:
    func = node.func
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


def _resized(node: ast.Call, attr: str, t: Tensor) -> Tensor:
    """``repeat_interleave(n, dim=d)``: axis d loses its name; ``unsqueeze(d)``: a size-1 axis at d."""
    axes = list(t.axes or ())
    dim = nm.int_value(nm.argument(node, 0 if attr == "unsqueeze" else 1, "dim") or ast.Constant(None))
    if dim is None or not -len(axes) - (attr == "unsqueeze") <= dim < len(axes) + (attr == "unsqueeze"):
        return Tensor(scale=t.scale, scale_at=t.scale_at)
    if attr == "unsqueeze":
        axes.insert(dim % (len(axes) + 1), int_label(1))
    else:
        axes[dim % len(axes)] = None
    return Tensor(axes=tuple(axes), order=None, scale=t.scale, scale_at=t.scale_at)


def _is_transpose(node: ast.expr, dims: tuple[int, int]) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "transpose"):
        return False
    found = tuple(nm.int_value(a) for a in node.args)
    return found in (dims, dims[::-1])


def _square(arg_nodes: list[ast.expr]) -> bool:
    """``view(..., N, N)``: a view that ends with the same size twice (not a literal)."""
    return len(arg_nodes) >= 2 and not any(isinstance(a, ast.Starred) for a in arg_nodes[-2:]) \
        and nm.int_value(arg_nodes[-1]) is None and ast.dump(arg_nodes[-1]) == ast.dump(arg_nodes[-2])


def _in_place_layer(made: ast.Call, unit: str) -> bool:
    """``nn.Linear(h, h)``, ``nn.Conv2d(c, c, kernel_size=1)``: features mixed in place, the shape kept (talking
    heads over the scores). ``unit`` is "features" (Linear) or "channels" (a convolution: a 1x1 kernel, stride 1)."""
    sizes = [nm.argument(made, i, f"{side}_{unit}") for i, side in enumerate(("in", "out"))]
    if None in sizes or ast.unparse(sizes[0]) != ast.unparse(sizes[1]):  # type: ignore[arg-type]
        return False
    if unit == "features":
        return True
    kernel, stride = nm.argument(made, 2, "kernel_size"), nm.argument(made, 3, "stride")
    return kernel is not None and nm.int_value(kernel) == 1 and (stride is None or nm.int_value(stride) == 1)


_UNIT = re.compile(r"normalize|l2norm")


def _returns_unit(cls: ast.ClassDef) -> bool:
    """``forward`` returns ``F.normalize(x, dim=-1)`` (or a name bound to it) with no gain on top."""
    forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        return False
    bound = {t.id: n.value for n in ast.walk(forward) if isinstance(n, ast.Assign)
             for t in n.targets if isinstance(t, ast.Name)}
    returns = [n.value for n in ast.walk(forward) if isinstance(n, ast.Return) and n.value is not None]
    plain = [bound.get(r.id, r) if isinstance(r, ast.Name) else r for r in returns]
    return bool(plain) and all(isinstance(r, ast.Call) and _UNIT.search(nm.dotted(r.func) or "") for r in plain)


def _activated(t: Tensor) -> Tensor:
    """``torch.sigmoid(scores)``, ``scores.exp()``: the same axes, weights rather than scores (nothing known of
    their scaling); any other tensor keeps what it was."""
    if t.role != "scores":
        return replace(t, uid=0, param=False)
    return replace(t, role=None, key_pos=None, key_t=False, uid=0, param=False, scale="unknown")


def _split_into_heads(x: Tensor) -> bool:
    """``[..., heads, d_head]``: a tensor whose last axis is one head's features, the heads before it."""
    axes = x.axes or ()
    return len(axes) >= 2 and axes[-1] == ops.D_HEAD and ops.HEADS in axes[:-1]
