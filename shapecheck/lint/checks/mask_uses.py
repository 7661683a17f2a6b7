"""What a boolean mask's True entries mean where it is read, and whether two reads agree.

Each consumer of a boolean mask gives its True entries one meaning: ``scores.masked_fill(m, -inf)`` and
``scores[m] = -inf`` mask where ``m`` is True; ``F.scaled_dot_product_attention(..., attn_mask=m)`` and
``torch.where(m, scores, -inf)`` attend where it is True. A mask of known polarity read the other way is SC180
(SC109 is the same for a fill); one mask read both ways in one function, whatever it means, is SC181: one of the
two reads has it backwards. A read counts where the mask it is given is known to be boolean: masked_fill and where
take nothing else, and a mask that reaches a boolean read through views and negations alone is one everywhere
(given to SDPA as a float, a mask is added to the scores instead).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint import polarity as pol
from shapecheck.lint.checks import on
from shapecheck.lint.checks.masks import fills_scores
from shapecheck.lint.mask_kinds import BOOL, FILLS, kind, large_negative, tested_bool
from shapecheck.lint.nodes import of_type, walk
from shapecheck.lint.scope import Scope

_ATTEND, _MASK = "attend", "mask out"
_SDPA = "scaled_dot_product_attention"


@dataclass(frozen=True)
class Use:
    """A read of mask ``root`` (negated or not on the way) whose True entries are the positions to ``action``."""

    node: ast.expr  # the mask as written at the read
    root: Optional[pol.Root]  # None where the mask is built at the read (``(ids == pad)[:, None]``)
    action: str  # _ATTEND or _MASK, for the mask as written
    reader: str  # for messages: what reads it
    boolean: bool  # the mask as written is known to be boolean (masked_fill and where take nothing else)

    @property
    def root_action(self) -> str:
        """What the root mask's own True entries are the positions to, by this read."""
        if self.root is None or not self.root.negated:
            return self.action
        return _MASK if self.action == _ATTEND else _ATTEND


@on(ev.FunctionDone, reports=("SC180", "SC181"))
def mask_uses(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    found = [u for u in _uses(scope, func.node) if u is not None]
    boolean_roots = {u.root.name for u in found if u.boolean and u.root and u.root.plain
                     and not tested_bool(scope, u.root.name, u.node.lineno)}  # not boolean only where tested
    uses = [u for u in found if u.boolean or u.root and u.root.plain and u.root.name in boolean_roots]
    reported = {id(u.node) for u in uses if _against_convention(scope, u)}
    by_root: dict[str, list[Use]] = {}
    for use in uses:
        if use.root is not None:
            by_root.setdefault(use.root.name, []).append(use)
    for name, reads in by_root.items():
        _both_ways(scope, func.node, name, reads, reported)


def _uses(scope: Scope, func: ast.AST):
    for call in of_type(func, ast.Call):
        name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)  # type: ignore[attr-defined]
        reader = _READERS.get(name)  # type: ignore[arg-type]
        if reader is not None:
            yield reader(scope, call)
    for assign in of_type(func, ast.Assign):
        if isinstance(assign.targets[0], ast.Subscript):  # type: ignore[attr-defined]
            yield _item_store(scope, assign)  # type: ignore[arg-type]


def _use(node: Optional[ast.expr], action: str, reader: str, boolean: bool) -> Optional[Use]:
    return None if node is None else Use(node, pol.root(node), action, reader, boolean)


def _fill(scope: Scope, call: ast.Call) -> Optional[Use]:
    """``scores.masked_fill(m, -inf)``: True entries are masked out."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in FILLS and len(call.args) == 2):
        return None
    receiver, (mask, value) = call.func.value, call.args
    if not large_negative(value) or not fills_scores(scope.values.get(id(receiver)), receiver):
        return None
    return _use(mask, _MASK, f"{call.func.attr}(..., {ast.unparse(value)})", True)


def _kernel(scope: Scope, call: ast.Call) -> Optional[Use]:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask=m)``: a boolean's True entries take part."""
    if not _torch_sdpa(scope, call):
        return None
    mask = nm.argument(call, 3, "attn_mask")
    if mask is None:
        return None
    return _use(mask, _ATTEND, "scaled_dot_product_attention's boolean attn_mask", kind(scope, mask) == BOOL)


def _torch_sdpa(scope: Scope, call: ast.Call) -> bool:
    """``F.scaled_dot_product_attention``, or the bare name where the file does not define its own."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr == _SDPA and nm.is_namespace(call.func.value)
    if not (isinstance(call.func, ast.Name) and call.func.id == _SDPA):
        return False
    if "defines_sdpa" not in scope.memo:
        scope.memo["defines_sdpa"] = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == _SDPA
                                         for n in walk(scope.tree))
    return not scope.memo["defines_sdpa"]


def _where(scope: Scope, call: ast.Call) -> Optional[Use]:
    """``torch.where(m, scores, -inf)`` keeps the scores where ``m`` is True; ``torch.where(m, -inf, scores)``
    masks there."""
    if (nm.dotted(call.func) or "").split(".")[-1] != "where" or len(call.args) != 3 \
            or not nm.is_namespace(call.func.value if isinstance(call.func, ast.Attribute) else call.func):
        return None
    mask, kept, other = call.args
    if large_negative(other) and not large_negative(kept):
        return _use(mask, _ATTEND, "torch.where(..., scores, <large negative>)", True)
    if large_negative(kept) and not large_negative(other):
        return _use(mask, _MASK, "torch.where(..., <large negative>, scores)", True)
    return None


def _item_store(scope: Scope, assign: ast.Assign) -> Optional[Use]:
    """``scores[m] = -inf`` with a boolean ``m``: True entries are masked out."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Subscript) \
            or not large_negative(assign.value):
        return None
    target = assign.targets[0]
    if not fills_scores(scope.values.get(id(target.value)), target.value) or kind(scope, target.slice) != BOOL:
        return None
    return _use(target.slice, _MASK, "an item assignment of a large negative", True)


_READERS = {**dict.fromkeys(FILLS, _fill), _SDPA: _kernel, "where": _where}  # a call's last name -> its reader


def _against_convention(scope: Scope, use: Use) -> bool:
    """SC180: a mask whose source says what its True entries are, read the other way by a kernel or a where
    (a fill read the other way is SC109's)."""
    if use.reader.startswith(tuple(FILLS)) or not use.boolean and not (use.root and use.root.plain):
        return False
    found = pol.polarity(scope, use.node)
    if found is None or found.by_name or found.keep == (use.action == _ATTEND):
        return False  # a convention from a parameter's name alone is too weak to report on (SC174 is opt-in)
    what = "the positions that may attend" if use.action == _ATTEND else "the positions to mask out"
    scope.report(msg.KernelMaskConvention, use.node, found.name, found.own_text, use.reader, what)
    return True


def _both_ways(scope: Scope, func: ast.AST, name: str, reads: list[Use], reported: set[int]) -> None:
    """SC181: the same mask, not stored again between, read as the positions to attend and as those to mask."""
    reads = sorted(reads, key=lambda u: (u.node.lineno, u.node.col_offset))
    for i, later in enumerate(reads):
        for earlier in reads[:i]:
            if earlier.root_action == later.root_action or id(earlier.node) in reported or id(later.node) in reported \
                    or pol.stored_between(func, name, earlier.node.lineno, later.node.lineno):
                continue
            scope.report(msg.MaskReadBothWays, later.node, name, earlier.root_action, earlier.reader,
                         earlier.node.lineno, later.root_action, later.reader)
            return
