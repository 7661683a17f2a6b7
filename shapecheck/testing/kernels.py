"""Attention that is not softmax attention, told from behaviour, and the properties every normalised attention keeps.

``probe.unnormalised(module, conv, ...)`` asks the module itself: three copies of one token must give every query the output
that token alone gives when the weights over the keys sum to 1 (softmax and normalised linear attention); ReLU, sigmoid
and other unnormalised kernels answer otherwise. ``softmax_axis`` shifts every key (or every query) by one vector inside
the module's own key (query) projection: softmax over the keys ignores a per-query constant in the scores, so only a
key shift leaves it unchanged (a query shift: softmax taken over the queries); a kernel that is no softmax moves under
both. The reference property uses both to skip, with its reason, where the softmax reference does not apply.

Same contract as ``properties.py`` for ``constant_values`` and ``one_key``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Optional

import torch
from torch import Tensor, nn

from shapecheck.testing.adapt import window_of
from shapecheck.testing.compare import Draw, Skip, diff
from shapecheck.testing.strategies import AttentionCase
from shapecheck.testing.subject import Subject
from shapecheck.testing.weights import Projections, reference_attention


def _rows_in(module: nn.Module, weight: Tensor) -> Optional[tuple[str, slice]]:
    """(name of the Linear holding ``weight``, the output rows it occupies there), or None (a copy, a Conv1D)."""
    for name, sub in module.named_modules():
        own = getattr(sub, "weight", None)
        if not isinstance(sub, nn.Linear) or own is None or weight.dim() != 2 or weight.stride() != own.stride():
            continue
        offset, rest = divmod(weight.data_ptr() - own.data_ptr(), own.stride(0) * own.element_size())
        if rest == 0 and 0 <= offset <= own.size(0) - weight.size(0) and weight.size(1) == own.size(1):
            return name, slice(offset, offset + weight.size(0))
    return None


def _shifted(module: nn.Module, weight: Tensor, seed: int) -> Optional[nn.Module]:
    """A copy of ``module`` whose projection of ``weight`` adds one random vector to every token's output, or None."""
    found = _rows_in(module, weight)
    if found is None:
        return None
    name, rows = found
    twin = copy.deepcopy(module)
    delta = 2 * torch.randn(rows.stop - rows.start, generator=torch.Generator().manual_seed(seed))  # (rows,)

    def add(_: nn.Module, __: object, out: Tensor) -> Tensor:
        out = out.clone()
        out[..., rows] = out[..., rows] + delta.to(out.dtype)
        return out

    twin.get_submodule(name).register_forward_hook(add)
    return twin


def softmax_axis(module: nn.Module, proj: Projections, run: Callable[[nn.Module], Tensor]) -> Optional[str]:
    """'keys' (a key shift changes nothing), 'queries' (only a query shift changes nothing), 'neither', or None (no shift built)."""
    base = run(module)
    keys, queries = _shifted(module, proj.wk, 3), _shifted(module, proj.wq, 4)
    if keys is None or queries is None:
        return None
    if _unmoved(run(keys), base):
        return "keys"
    return "queries" if _unmoved(run(queries), base) else "neither"


def _unmoved(shifted: Tensor, base: Tensor) -> bool:
    """The same output, or the same output moved by one vector everywhere (keys that also feed the values: with weights
    summing to 1, a shifted value moves every output by its projection)."""
    moved = shifted - base  # (batch, seq_q, d_model)
    return diff(shifted, base) is None or diff(moved, moved[:1, :1].expand_as(moved)) is None


# ---------------------------------------------------------------- properties of any normalised attention


def _visible(s: Subject, case: AttentionCase, keep: Optional[Tensor]) -> Tensor:
    from shapecheck.testing.properties import _causal_flag, _visible_rows

    causal = _causal_flag(s)
    rows = _visible_rows(keep, causal, case.shape.batch, case.shape.seq_q, case.shape.seq_k, window_of(s.module(case.shape)) if causal else None)
    return rows if keep is None or s.conv.cross else rows & keep


def constant_values(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Every visible key the same token (masked keys other tokens): each query gets the output of that token alone."""
    module, keep = s.module(case.shape), case.keep if s.has_mask else None
    source = case.key if s.conv.cross else case.query
    token = source[:, :1]  # (batch, 1, d_model)
    same = token.expand_as(source)
    if keep is not None:
        same = torch.where(keep[..., None], same, source * 3)  # (batch, seq_k, d_model)
    one = None if keep is None else torch.ones(case.shape.batch, 1, dtype=torch.bool)
    if s.conv.cross:
        out = s.run(module, case, key=same, value=same, keep=keep).output
        alone = s.run(module, case, key=token, value=token, keep=one).output
    else:
        out = s.run(module, case, query=same, keep=keep).output
        alone = s.run(module, case, query=token, keep=one).output.expand_as(out)
    rows = _visible(s, case, keep)
    found = diff(out[rows], alone[rows])
    return f"with every visible key the same token, the output differs from that token alone: {found}" if found else None


def one_key(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """One key: every query gets that key's value through the module's value and output projections (any kernel, weight 1)."""
    module = s.module(case.shape)
    candidates = s.projection_candidates(module)  # a packed q/k/v: each layout real code uses
    if not candidates:
        return None
    key = (case.key if s.conv.cross else case.query)[:, :1]  # (batch, 1, d_model)
    query = case.query if s.conv.cross else key
    out = s.run(module, case, query=query, key=key, value=key, use_mask=False).output
    found = None
    for proj in candidates:
        for tiled in (False, True):  # kv heads shared by consecutive query heads, or tiled
            try:
                expected = reference_attention(proj, case.shape.heads, query, key, key, tiled=tiled)  # one key: weight 1, any kernel
            except Exception:  # noqa: BLE001 - a packed layout this width cannot take
                continue
            found = diff(out, expected)
            if found is None:
                return None
    if len(candidates) > 1 or found is None:
        raise Skip(f"{candidates[0].pattern}: no packing the reference knows explains the single-key output: no verdict")
    return f"with a single key, the output is not its value through the value and output projections: {found}"


def _normalised_applies(s: Subject) -> Optional[str]:
    return s.unnormalised


def _one_key_applies(s: Subject) -> Optional[str]:
    if s.unnormalised:
        return s.unnormalised
    if not s.uses_reference:
        return s.reference_note
    return None
