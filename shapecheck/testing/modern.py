"""Properties of modern attention: KV caches, rotary positions, grouped key/value heads, sliding windows.

Same contract as ``properties.py``: ``check(subject, case, draw)`` returns a reason or None,
``applies(subject)`` returns why the property is skipped or None.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Optional

import torch
from hypothesis import strategies as st
from torch import Tensor, nn

from shapecheck.testing.adapt import Convention, Sizes, call, window_of
from shapecheck.testing.compare import Draw, diff
from shapecheck.testing.probe import first_line
from shapecheck.testing.strategies import AttentionCase
from shapecheck.testing.subject import Subject
from shapecheck.testing.weights import reference_attention

# ---------------------------------------------------------------- kv_cache


def kv_cache(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Prefill a prefix, then decode the rest in chunks through the module's cache: the outputs equal one full forward."""
    module, seq = s.module(case.shape), case.shape.seq_q
    prefix = draw(st.integers(1, seq - 1), "prefill")
    chunk = draw(st.integers(1, seq - prefix), "decode_chunk")
    full = s.run(module, case, use_mask=False).output
    bounds = [(0, prefix)] + [(i, min(i + chunk, seq)) for i in range(prefix, seq, chunk)]
    outputs, cache = [], None
    for start, stop in bounds:
        out, cache = s.run_cached(module, case, start, stop, cache)
        outputs.append(out)
    found = diff(torch.cat(outputs, dim=1), full)
    return f"prefill {prefix} then decode {chunk} at a time: the outputs differ from one full forward: {found}" if found else None


def _cache_applies(s: Subject) -> Optional[str]:
    name, _ = s.cache_arguments
    if not name:
        return "forward takes no KV cache (past_key_value(s), layer_past, cache, kv_cache)"
    if s.conv.cross or s.causal_mode != "always":
        return "not a causal self-attention module: incremental decoding does not apply"
    return _cache_runs(s)


def _cache_runs(s: Subject) -> Optional[str]:
    """None when a prefill and one decoding step run; else why the cache could not be driven (no verdict)."""
    from shapecheck.testing.strategies import AttentionShape, random_inputs

    shape = AttentionShape(2, 2 * s.d_head_multiple, 4 * s.d_head_multiple, 1, 3, 3, 2 if s.grouped else None)
    query, key, value = random_inputs(shape, 0, cross=False)
    case = AttentionCase(shape, query, key, value, None, 0)
    try:
        _, cache = s.run_cached(s.module(shape), case, 0, 2, None)
        s.run_cached(s.module(shape), case, 2, 3, cache)
    except Exception as error:  # noqa: BLE001 - a cache protocol verify does not know: no verdict
        return f"the cache ({s.cache_arguments[0]}) could not be driven: {first_line(error)}"
    return None


def cache_offset(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Relative positions through a cache: prefill and decode at positions p, p + 1 ... equal one full forward at 0, 1 ..."""
    module, seq = s.module(case.shape), case.shape.seq_q
    offset = draw(st.integers(1, 16), "position_offset")
    prefix = draw(st.integers(1, seq - 1), "prefill")
    full = s.run(module, case, use_mask=False).output
    outputs, cache = [], None
    for start, stop in [(0, prefix)] + [(i, i + 1) for i in range(prefix, seq)]:
        out, cache = s.run_cached(module, case, start, stop, cache, offset=offset)
        outputs.append(out)
    found = diff(torch.cat(outputs, dim=1), full)
    return (f"prefill {prefix} then decode one at a time at positions from {offset}: the outputs differ from one full forward "
            f"at positions from 0 (a shift without a cache changes nothing): {found}") if found else None


def _cache_offset_applies(s: Subject) -> Optional[str]:
    reason = _cache_applies(s)
    if reason:
        return reason
    if not s.conv.positional:
        return "the module takes no positional input: there is no offset to give its cache"
    if "start_pos" in s.conv.supplied.values():
        return "the cache is indexed by absolute position (start_pos): an offset would leave its first slots empty"
    if not _shift_invariant(s):
        return f"a shift of every position changes the output without a cache: the {s.conv.positional} positions are absolute"
    return None


def _shift_invariant(s: Subject) -> bool:
    """At 2 heads and 3 tokens, positions 5, 6, 7 give the output of 0, 1, 2 (decided by behaviour, not by the input's name)."""
    from shapecheck.testing.strategies import AttentionShape, random_inputs

    shape = AttentionShape(2, 2 * s.d_head_multiple, 4 * s.d_head_multiple, 1, 3, 3, 2 if s.grouped else None)
    query, key, value = random_inputs(shape, 0, cross=False)
    case = AttentionCase(shape, query, key, value, None, 0)
    module = s.module(shape)
    base = s.run(module, case, use_mask=False).output
    return diff(s.run(module, case, use_mask=False, positions=torch.arange(3) + 5).output, base) is None


# ---------------------------------------------------------------- rotary


def rotary(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Shifting every position by the same offset leaves the output unchanged (rotary encodes relative positions)."""
    module, seq = s.module(case.shape), case.shape.seq_q
    offset = draw(st.integers(1, 16), "position_offset")
    base = s.run(module, case, use_mask=False).output
    shifted = s.run(module, case, use_mask=False, positions=torch.arange(seq) + offset).output
    found = diff(shifted, base)
    return (f"positions shifted by {offset} changed the output ({s.conv.positional} should depend only on relative positions): {found}"
            if found else None)


RELATIVE = ("rotary", "alibi", "position_bias")  # positional inputs that encode relative positions only


def _rotary_applies(s: Subject) -> Optional[str]:
    if s.conv.positional not in RELATIVE:
        return "the module takes no relative positional input (rotary position_embeddings, freqs_cis, ALiBi, relative bias)"
    if s.conv.cross and s.conv.positional != "rotary":
        return "cross-attention: key positions are not moved with the queries'"
    return None


# ---------------------------------------------------------------- grouped heads


def grouped_heads(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """With fewer kv heads than query heads, the module equals the reference sharing each kv head with its group."""
    from shapecheck.testing.properties import reference

    found = reference(s, case, draw)
    if found is None or found.startswith("warning: "):
        return None
    return f"with {case.shape.kv_heads} kv heads for {case.shape.heads} query heads: {found}"


def _grouped_applies(s: Subject) -> Optional[str]:
    from shapecheck.testing.properties import _reference_applies

    if not s.grouped:
        return "the module has no key/value head count (num_key_value_heads, n_kv_heads, kv_heads)"
    return _reference_applies(s)


# ---------------------------------------------------------------- positions matter


def positions_matter(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Given positions twice as far apart, a module that takes positions answers differently (it does not ignore them)."""
    from shapecheck.testing.degenerate import MIN_WIDTH, same

    seq = case.shape.seq_q
    if case.shape.d_model < MIN_WIDTH:
        return None
    module = s.module(case.shape)
    base = s.run(module, case, use_mask=False).output
    spread = s.run(module, case, use_mask=False, positions=torch.arange(seq) * 2).output
    if same(spread, base) and not _positions_matter_when_wide(s):  # partial rotary turns nothing at small head sizes
        return (f"positions 0, 2, 4 ... gave the same output as 0, 1, 2 ... over {seq} tokens: "
                f"the module ignores the {s.conv.positional} input it takes")
    return None


def _positions_matter_when_wide(s: Subject) -> bool:
    """At 2 heads of size 16·multiple and 3 tokens, spreading the positions changes the output."""
    from shapecheck.testing.degenerate import same
    from shapecheck.testing.strategies import AttentionShape, random_inputs

    m = s.d_head_multiple
    shape = AttentionShape(2, 16 * m, 32 * m, 1, 3, 3, 2 if s.grouped else None)
    query, key, value = random_inputs(shape, 0, cross=False)
    case = AttentionCase(shape, query, key, value, None, 0)
    module = s.module(shape)
    base = s.run(module, case, use_mask=False).output
    return not same(s.run(module, case, use_mask=False, positions=torch.arange(3) * 2).output, base)


def _positions_applies(s: Subject) -> Optional[str]:
    if not s.conv.positional:
        return "the module takes no positional input (positions, rotary, ALiBi, relative bias)"
    if s.conv.cross:
        return "cross-attention: key positions are not moved with the queries'"
    return None


# ---------------------------------------------------------------- sliding window


def sliding_window(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """With window w, query i depends on exactly the keys j with i − w < j ≤ i (each key perturbed in turn)."""
    module = s.module(case.shape)
    window = window_of(module)
    for j, moved in _moved_by_each_key(s, module, case, case.seed + 3, use_mask=False):
        reason = _window_reason(moved, j, window, causal=s.causal_mode is not None)  # type: ignore[arg-type]
        if reason:
            return reason
    return None


def _moved_by_each_key(s: Subject, module: nn.Module, case: AttentionCase, seed: int,
                       **run: Any) -> Iterator[tuple[int, Tensor]]:
    """(j, which query rows moved) for each position j whose token is replaced in turn: (batch, seq) booleans."""
    base = s.run(module, case, **run).output
    gen = torch.Generator().manual_seed(seed)
    for j in range(case.shape.seq_q):
        edited = case.query.clone()
        edited[:, j] = torch.randn(edited[:, j].shape, generator=gen) * 3  # (batch, d_model)
        out = s.run(module, case, query=edited, key=edited, value=edited, **run).output
        yield j, ~torch.isclose(out, base, atol=1e-5, rtol=1e-4).all(dim=-1)  # (batch, seq)


def _window_reason(moved: Tensor, j: int, window: int, *, causal: bool) -> Optional[str]:
    allowed = _window_allowed(moved.size(1), window, causal)
    for i in range(moved.size(1)):
        if i == j:
            continue  # token j is also the query at j
        expected = bool(allowed[i, j])
        if bool(moved[:, i].any()) != expected:
            seen = "depends on" if not expected else "ignores"
            last = i if causal else i + window - 1
            return f"with window {window}, query {i} {seen} key {j} (it should see keys {max(0, i - window + 1)}..{last})"
    return None


def _window_applies(s: Subject) -> Optional[str]:
    window = window_of(s.module(s._shape(1, s.d_head_multiple)))
    if window is None:
        return "no sliding window (window, window_size, sliding_window) on the module or its config"
    if window >= s.options.max_seq:
        return f"the window ({window}) is not shorter than the longest drawn sequence ({s.options.max_seq}); build with --init window=2"
    if s.conv.cross:
        return "cross-attention: windows apply to self-attention"
    return None


def window_padding(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Window and padding together: query i depends on key j exactly when j is in i's window and j is not padding
    (the hidden keys are the union of the two masks; each key perturbed in turn, padded query rows not judged)."""
    from shapecheck.testing.properties import describe_mask

    module, seq, keep = s.module(case.shape), case.shape.seq_q, case.keep
    if keep is None:
        return None
    window, causal = window_of(module), s.causal_mode is not None
    allowed = keep[:, None, :] & _window_allowed(seq, window, causal)[None]  # (batch, seq_q, seq_k)
    judged = keep & allowed.any(dim=-1)  # (batch, seq_q): real query rows that see some key
    for j, moved in _moved_by_each_key(s, module, case, case.seed + 5, keep=keep):
        for b, i in judged.nonzero().tolist():
            if i != j and bool(moved[b, i]) != bool(allowed[b, i, j]):
                seen = "depends on" if moved[b, i] else "ignores"
                first, last = (max(0, i - window + 1), i) if causal else (max(0, i - window + 1), min(seq - 1, i + window - 1))
                why = "a padding key" if not keep[b, j] else (f"its window is keys {first}..{last}" if moved[b, i] else "a real key in its window")
                return (f"with window {window} and key mask {describe_mask(keep)}: in batch item {b}, query {i} {seen} key {j} ({why}); "
                        "the keys hidden must be the union of the window and the padding")
    return None


def _window_allowed(seq: int, window: int, causal: bool) -> Tensor:
    """(seq, seq): key j visible to query i under the window alone (i − w < j ≤ i, or |i − j| < w without causality)."""
    i, j = torch.arange(seq)[:, None], torch.arange(seq)[None, :]
    return ((j <= i) & (j > i - window)) if causal else ((i - j).abs() < window)


def _window_padding_applies(s: Subject) -> Optional[str]:
    window = _window_applies(s)
    if window:
        return window
    if not s.has_mask:
        switch = next((n for n in s.conv.notes if n.startswith("mask: ") and "not a padding mask" in n), None)
        if switch:  # with a window, a mask that changes the output with every key visible may be the window lost
            return (f"{switch[len('mask: '):]}: with a sliding window this may be the window lost when a mask is given; "
                    "pass --mask keep (or its convention) to check the window with padding")
        return "no mask argument (or --mask none)"
    return None


# ---------------------------------------------------------------- cross-attention from an optional memory


def _cross_conv(s: Subject) -> Convention:
    return replace(s.conv, memory_name=s.conv.optional_memory, optional_memory=None, causal_name=None)


def cross_attention(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """Fed a memory of another length: output (batch, seq_q, d_model); permuting the memory changes nothing; the reference agrees."""
    from shapecheck.testing.properties import declared_scale

    module, conv, shape = s.module(case.shape), _cross_conv(s), case.shape
    seq_k = draw(st.integers(1, s.options.max_seq), "memory_length")
    memory = torch.randn(shape.batch, seq_k, shape.d_model, generator=torch.Generator().manual_seed(case.seed + 4))  # (batch, seq_k, d_model)
    sizes = Sizes(shape.heads, shape.d_head)
    out = call(module, conv, case.query, memory, memory, sizes=sizes).output
    if tuple(out.shape) != (shape.batch, shape.seq_q, shape.d_model):
        return f"with a memory of length {seq_k}: output shape {tuple(out.shape)}, expected {(shape.batch, shape.seq_q, shape.d_model)}"
    order = torch.tensor(draw(st.permutations(range(seq_k)), "memory_permutation"))
    found = diff(call(module, conv, case.query, memory[:, order], memory[:, order], sizes=sizes).output, out)
    if found:
        return f"permuting the memory changed the output: {found}"
    proj = s.projections(module)
    if proj is None:
        return None
    expected = reference_attention(proj, shape.heads, case.query, memory, memory, scale=s.options.scale or declared_scale(module))
    found = diff(out, expected)
    return f"with a memory of length {seq_k}: differs from the float64 reference ({proj.pattern}): {found}" if found else None


def _cross_applies(s: Subject) -> Optional[str]:
    if s.conv.optional_memory is None:
        return "forward takes no optional memory (encoder_hidden_states, key_value_states, memory, context)"
    if s.conv.positional or s.conv.causal_in_mask:
        return "positional or causal-mask inputs: the memory has no positions to give"
    shape = s._shape(2, s.d_head_multiple)
    query = torch.randn(1, 2, shape.d_model, generator=torch.Generator().manual_seed(0))  # (batch, seq_q, d_model)
    memory = torch.randn(1, 2, shape.d_model, generator=torch.Generator().manual_seed(1))  # the query's length: only the protocol
    try:
        call(s.module(shape), _cross_conv(s), query, memory, memory, sizes=Sizes(2, shape.d_head))
    except Exception as error:  # noqa: BLE001 - built for self-attention only (GPT-2 without is_cross_attention): no verdict
        return f"the module as built does not take {s.conv.optional_memory}: {first_line(error)}"
    return None
