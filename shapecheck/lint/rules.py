"""The rule hooks the evaluator calls: softmax, scaling, view/reshape, masked_fill, dropout.

Each hook reads what tracking knows and reports through ``self.report``; where
an axis is unnamed or a value unknown it says nothing.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import replace
from typing import Optional, Sequence

from shapecheck.axes import AXES
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.tracking import (
    Dim, Label, Target, Tensor, Value, groups, name_label, show, unique_index,
)

HEADS, D_HEAD = Label(("heads",), "heads"), Label(("d_head",), "d_head")
SEQ_Q, SEQ_K = Label(("seq_q",), "seq_q"), Label(("seq_k",), "seq_k")
_WORD = re.compile(r"[A-Za-z_]\w*")
_SCORE_WORDS = re.compile(r"score|attn|attention|weight|logit", re.I)
_MIXING = frozenset({"batch", "heads"})  # axes whose mixing corrupts every example


class Rules:
    """Mixin: the checks. Needs ``report``, ``env``, ``values``, ``scalars``, ``cls`` and ``func``."""

    env: dict[str, Optional[Value]]
    values: dict[int, Value]
    scalars: dict[str, ast.expr]

    def report(self, message: type[msg.Message], node: object, *args: object) -> None: ...
    def class_attr(self, name: str) -> Optional[ast.expr]: ...
    def in_module_method(self) -> Optional[str]: ...
    def is_untouched_param(self, name: str) -> bool: ...
    def assigned_names(self) -> Sequence[str]: ...

    # ---- softmax and scaling ------------------------------------------------------------
    def on_softmax(self, call: ast.Call, node: Optional[ast.expr], t: Optional[Value], dim: Optional[ast.expr],
                   has_dim: bool) -> Tensor:
        if not isinstance(t, Tensor):
            return Tensor(role="probs")
        if t.role == "scores":
            self._softmax_axis(call, t, dim, has_dim)
            if t.scale == "none":
                self.report(msg.UnscaledScores, call)
            elif t.scale == "width" and t.scale_at is not None:
                self.report(msg.WidthScaledScores, t.scale_at, "d_model")
            if isinstance(node, ast.Name):
                self._mask_reaches(call, node.id, t)
        return Tensor(axes=t.axes, role="probs")

    def _softmax_axis(self, call: ast.Call, t: Tensor, dim: Optional[ast.expr], has_dim: bool) -> None:
        rank, key = t.rank, t.key_pos
        if key is None:
            return
        if not has_dim:
            if rank is None:
                return
            got: Optional[int] = 0 if rank in (0, 1, 3) else 1
            said = f"the implicit dim={got}"
        else:
            got = nm.int_value(dim) if dim is not None else None
            said = f"dim={got}"
        if got is None:
            return
        if rank is None:
            if got < 0 and got != key:
                self.report(msg.SoftmaxAxis, call, said, "Q·Kᵀ", "dim=-1")
            return
        if not -rank <= got < rank or got % rank == key:
            return
        axes = t.axes or ()
        named = axes[got % rank]
        key_name = axes[key]
        self.report(msg.SoftmaxAxis, call, f"{said} ({named.text if named else '?'})", f"[{show(axes)}]",
                    f"dim=-1 (the keys, {key_name.text if key_name else 'seq_k'})")

    def on_scaled(self, node: ast.AST, t: Tensor, factor: ast.expr) -> Tensor:
        kind = nm.scale_kind(self._scale_names(factor, 0))
        at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if t.scale not in ("none", "unknown") and kind != "width":
            kind = t.scale if t.scale != "other" else kind
        return replace(t, scale=kind, scale_at=at, order=t.order, uid=0, param=False)

    def _scale_names(self, node: ast.AST, depth: int) -> list[str]:
        """Identifiers a scale factor is made of, following local names and ``self.`` attributes."""
        found: list[str] = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found.extend(self._name_parts(sub.id, depth))
            elif isinstance(sub, ast.Attribute):
                found.append(sub.attr)
                defined = self.class_attr(sub.attr) if nm.self_attr(sub) else None
                if defined is not None and depth < 3:
                    found.extend(self._scale_names(defined, depth + 1))
            elif isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Div, ast.FloorDiv)) \
                    and not isinstance(sub.right, ast.Constant):
                found.append("heads")  # a width divided by something: a per-head size
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "size":
                value = self.values.get(id(sub))
                if isinstance(value, Dim) and value.label is not None:
                    found.extend(_WORD.findall(value.label.text))
        return found

    def _name_parts(self, name: str, depth: int) -> list[str]:
        value = self.env.get(name)
        if name in self.scalars and depth < 3:
            return [name, *self._scale_names(self.scalars[name], depth + 1)]
        if isinstance(value, Dim):
            return [name, *_WORD.findall(value.label.text)] if value.label is not None else [name]
        return [name]

    # ---- masks ---------------------------------------------------------------------------
    def _mask_reaches(self, call: ast.Call, name: str, t: Tensor) -> None:
        """Seed 001: masked scores kept under one name while the softmax reads another."""
        line = call.lineno
        if t.partial and t.mask_source is not None and t.mask_source != name and t.mask_at is not None:
            self.report(msg.MaskedFillWrongName, t.mask_at, name, " only when the mask branch runs", line,
                        f"'{name}', unbound otherwise (the scores are in '{t.mask_source}')", t.mask_source)
            return
        for other, value in self.env.items():
            if (other != name and isinstance(value, Tensor) and value.mask_source == name
                    and value.mask_uid == t.uid and value.mask_at is not None and t.uid):
                self.report(msg.MaskedFillWrongName, value.mask_at, other, "", line,
                            f"the unmasked '{name}'", name)

    def on_masked_fill(self, call: ast.Call, mask: Optional[ast.expr]) -> None:
        if mask is None:
            return
        found = self._mask_misuse(mask, negated=False)
        if found is None:
            return
        name, keep = found
        if keep and not self._fills_scores(call):
            return
        if keep:
            self.report(msg.MaskConvention, mask, name, "1 = attend (Hugging Face convention)",
                        f"fill where the mask is 0: masked_fill({name} == 0, ...)")
        else:
            self.report(msg.MaskConvention, mask, name, "True = padding (nn.MultiheadAttention convention)",
                        f"fill where the mask is True: masked_fill({name}, ...), without negating it")

    def _fills_scores(self, call: ast.Call) -> bool:
        func = call.func
        receiver = call.args[0] if nm.is_namespace(func.value) and call.args else func.value  # type: ignore[attr-defined]
        value = self.values.get(id(receiver))
        if isinstance(value, Tensor) and value.role == "scores":
            return True
        return any(_SCORE_WORDS.search(n) for n in nm.identifiers(receiver))

    def _mask_misuse(self, node: ast.expr, negated: bool) -> Optional[tuple[str, bool]]:
        """(name, is_keep_mask) when a conventionally named mask is used the wrong way round."""
        if isinstance(node, ast.Name):
            if not self.is_untouched_param(node.id):
                return None
            if node.id in nm.KEEP_MASKS and not negated:
                return node.id, True
            if node.id in nm.PAD_MASKS and negated:
                return node.id, False
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            return self._mask_misuse(node.operand, not negated)
        if isinstance(node, ast.Subscript):
            return self._mask_misuse(node.value, negated)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            flip = _compare_flips(node.ops[0], node.comparators[0])
            return None if flip is None else self._mask_misuse(node.left, negated ^ flip)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            if attr == "logical_not":
                return self._mask_misuse(node.func.value, not negated)
            if attr in ("eq", "ne") and len(node.args) == 1:
                flip = _compare_flips(ast.Eq() if attr == "eq" else ast.NotEq(), node.args[0])
                return None if flip is None else self._mask_misuse(node.func.value, negated ^ flip)
            if attr in ("bool", "to", "unsqueeze", "view", "reshape", "expand", "expand_as", "type"):
                return self._mask_misuse(node.func.value, negated)
        return None

    # ---- dropout -------------------------------------------------------------------------
    def on_dropout(self, call: ast.Call, name: str) -> None:
        method = self.in_module_method()
        if method is None or name.split(".")[-1].rstrip(")") not in nm.DROPOUT or name.startswith("torch.dropout"):
            return
        if nm.keyword(call, "training") is None and len(call.args) < 3:
            self.report(msg.DropoutAlwaysOn, call, name, method)

    # ---- view / reshape ------------------------------------------------------------------
    def on_reshape(self, call: ast.Call, kind: str, t: Tensor, target: Optional[list[Target]]) -> None:
        if target is None:
            return
        src = t.axes
        if self._key_length(call, kind, src, target):
            return
        if src is None:
            return
        for check in (self._order, self._merge, self._split):
            if check(call, kind, src, target):
                break
        if kind == "view":
            self._contiguous(call, t, src, target)

    def _key_length(self, call: ast.Call, kind: str, src: Optional[Sequence], target: list[Target]) -> bool:
        if SEQ_Q not in target or SEQ_K in target:
            return False
        by_axes = src is not None and unique_index(src, SEQ_K) is not None and SEQ_Q not in src
        by_name = any(nm.is_key_name(n) for n in self._receiver_names(call)) and self._seq_k_name() is not None
        if not (by_axes or by_name):
            return False
        q_text = _arg_text(call, target.index(SEQ_Q), "tgt_len")
        self.report(msg.KeyQueryLength, call, q_text, kind, show(target), self._seq_k_name() or "src_len")
        return True

    def _receiver_names(self, call: ast.Call) -> list[str]:
        """The names assigned to, and the names along the receiver's chain (``self.k_proj(x).view`` -> k_proj)."""
        found = list(self.assigned_names())
        node = call.func.value if isinstance(call.func, ast.Attribute) else None
        while node is not None:
            if isinstance(node, ast.Name):
                found.append(node.id)
                break
            attr = nm.self_attr(node)
            if attr is not None:
                found.append(attr)
                break
            node = node.func if isinstance(node, ast.Call) else getattr(node, "value", None) \
                if isinstance(node, (ast.Attribute, ast.Subscript)) else None
        return found

    def _seq_k_name(self) -> Optional[str]:
        for name, value in self.env.items():
            if isinstance(value, Dim) and value.label == SEQ_K:
                return name
            if isinstance(value, Tensor) and value.param and name_label(name) == SEQ_K:
                return name
        return None

    def _order(self, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
        pairs = []
        for j, label in enumerate(target):
            if isinstance(label, Label) and label.atoms and not all(a.isdigit() for a in label.atoms):
                i = unique_index(src, label)
                if i is not None and unique_index(target, label) == j:
                    pairs.append((j, i, label))
        for (_, i1, first), (_, i2, second) in zip(pairs, pairs[1:]):
            if i1 > i2 and _MIXING & {first.text, second.text} and {first.text, second.text} <= set(AXES):
                self.report(msg.ReshapeOrder, call, kind, show(target), show(src), first.text, second.text)
                return True
        return False

    def _merge(self, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
        ph, pd = unique_index(src, HEADS), unique_index(src, D_HEAD)
        if ph is None or pd is None or pd == ph + 1:
            return False
        if HEADS in target or D_HEAD in target:
            return False
        lo, hi = min(ph, pd), max(ph, pd)
        between = Counter(a for axis in src[lo + 1:hi] if axis is not None for a in axis.atoms)
        for label in target:
            atoms = Counter(label.atoms) if isinstance(label, Label) else Counter()
            if atoms["heads"] < 1 or atoms["d_head"] < 1:
                continue
            if pd > ph and not between - atoms:
                continue  # the merged axis also takes the axes in between: a flatten
            self.report(msg.MergeWithoutTranspose, call, kind, show(target), show(src))
            return True
        return False

    def _split(self, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
        last = src[-1] if src else None
        if last is not None and not {"heads", "d_head"} <= set(last.atoms):
            return False
        for axis in src[:-1]:
            if axis is None or not set(axis.atoms) <= set(AXES) or {"heads", "d_head"} & set(axis.atoms):
                return False  # heads may come from another axis (batch*heads), or an axis has no name
        placed = [j for j, label in enumerate(target) if label in (HEADS, D_HEAD)]
        if not placed:
            return False
        for j, label in enumerate(target):
            if not isinstance(label, Label) or not label.atoms or j < placed[0]:
                continue
            i = unique_index(src, label)
            if i is not None and i < len(src) - 1 and unique_index(target, label) == j:
                self.report(msg.SplitWithoutTranspose, call, kind, show(target), show(src), label.text)
                return True
        return False

    def _contiguous(self, call: ast.Call, t: Tensor, src: Sequence, target: list[Target]) -> None:
        order = t.order
        if order is None or list(order) == sorted(order) or len(order) != len(src):
            return
        found = groups(src, target)
        if found is None:
            return
        for start, end in found:
            if any(order[k + 1] != order[k] + 1 for k in range(start, end - 1)):
                self.report(msg.ViewNotContiguous, call, show(target), show(src))
                return


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


def _arg_text(call: ast.Call, index: int, default: str) -> str:
    plain = call.args
    if len(plain) == 1 and isinstance(plain[0], (ast.Tuple, ast.List)):
        plain = plain[0].elts
    if index < len(plain) and not any(isinstance(a, ast.Starred) for a in plain):
        return ast.unparse(plain[index])
    return default

