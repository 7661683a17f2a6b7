"""Whole models (``forward(input_ids, attention_mask, ...)``): mask bugs made outside the attention layer.

``ModelSubject`` builds the model small (d_model 16, 2 heads, 2 layers, vocab 97) and calls it with
token ids; ``MODEL_PROPERTIES`` are checked with the same runner as attention properties:
deterministic eval, batch independence, padding invariance (right padding, and left padding with
position ids where the model takes them), future independence of a causal model, and KV-cache
consistency of incremental decoding against the full forward.
"""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple, Optional

import torch
from hypothesis import strategies as st
from torch import Tensor, nn

from shapecheck.errors import UsageError
from shapecheck.target import Target, build
from shapecheck.testing.adapt import read_outcome
from shapecheck.testing.compare import Draw, diff
from shapecheck.testing.probe import first_line
from shapecheck.vocabulary import forward_role

VOCAB, LAYERS, D_MODEL, HEADS = 97, 2, 16, 2


class ModelCase(NamedTuple):
    """Token ids (batch, seq) and each item's real length (the rest is padding where a property pads)."""

    ids: Tensor
    lengths: tuple[int, ...]
    seed: int

    def describe(self) -> dict[str, Any]:
        return {"batch": self.ids.size(0), "seq": self.ids.size(1), "lengths": list(self.lengths)}


def takes_token_ids(target: Target) -> bool:
    """Whether ``target``'s forward takes ``input_ids`` (a whole model rather than an attention layer)."""
    forward = getattr(target.obj, "forward", None) if target.is_class else None
    try:
        return forward is not None and "input_ids" in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False


class ModelSubject:
    """The model built once, small, in eval mode; its forward's optional inputs read by role."""

    def __init__(self, target: Target, options: Any) -> None:
        self.target, self.options = target, options
        sizes = {"d_model": D_MODEL, "heads": HEADS, "layers": LAYERS, "vocab": VOCAB, "max_seq": 64, "dropout": options.dropout,
                 "layer_index": 0}
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(options.seed)
            model, self.construction = build(target, sizes, keep_defaults=False, init=options.init)
        self.model: nn.Module = model.eval()
        self.names = [p for p in inspect.signature(self.model.forward).parameters]
        self.past = next((n for n in self.names if forward_role(n) == "cache"), None)
        self.causal = self._probe()
        self.notes: tuple[str, ...] = (f"whole model: forward(input_ids, ...) takes {', '.join(self.names[:6])}",
                                       "causal: later tokens do not change earlier outputs" if self.causal else "not causal")

    def call(self, ids: Tensor, mask: Optional[Tensor] = None, positions: Optional[Tensor] = None, past: Any = None,
             use_cache: bool = False) -> tuple[Tensor, Any]:
        kwargs: dict[str, Any] = {"input_ids": ids}
        if mask is not None and "attention_mask" in self.names:
            kwargs["attention_mask"] = mask.long()
        if positions is not None and "position_ids" in self.names:
            kwargs["position_ids"] = positions
        if self.past is not None and (past is not None or use_cache):
            kwargs[self.past] = past
        if "use_cache" in self.names:
            kwargs["use_cache"] = use_cache
        result = self.model(**kwargs)
        output = read_outcome(result, True, ids.size(1), ids.size(1)).output
        cache = result.get(self.past) if isinstance(result, dict) and self.past else (result[1] if isinstance(result, tuple) and len(result) > 1 else None)
        return output, cache

    def _probe(self) -> bool:
        ids = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(0))
        try:
            base = self.call(ids)[0]
        except Exception as error:  # noqa: BLE001 - the model may raise anything
            raise UsageError(f"{self.target.spec}: could not run: {type(self.model).__name__}(input_ids=int64 (2, 5)) "
                             f"raised {first_line(error)}") from None
        edited = ids.clone()
        edited[:, -1] = (edited[:, -1] + 1) % VOCAB
        return bool(torch.allclose(self.call(edited)[0][:, :-1], base[:, :-1], atol=1e-5))

    def cases(self, prop: Any) -> st.SearchStrategy[ModelCase]:
        return _cases(self.options.max_batch, max(2, self.options.max_seq + 1))


@st.composite
def _cases(draw: st.DrawFn, max_batch: int, max_seq: int) -> ModelCase:
    batch, seq, seed = draw(st.integers(1, max_batch)), draw(st.integers(2, max_seq)), draw(st.integers(0, 2 ** 16))
    lengths = tuple(draw(st.integers(1, seq)) for _ in range(batch))
    ids = torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))
    return ModelCase(ids, lengths, seed)


# ---------------------------------------------------------------- properties


def deterministic_eval(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Two identical calls in eval mode agree (built with dropout > 0)."""
    found = diff(s.call(case.ids)[0], s.call(case.ids)[0])
    return f"two calls in eval mode differ: {found}" if found else None


def batch_independence(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Item i of a batch equals item i alone."""
    whole = s.call(case.ids)[0]
    for i in range(case.ids.size(0)):
        found = diff(whole[i:i + 1], s.call(case.ids[i:i + 1])[0])
        if found:
            return f"batch item {i} differs from the same item alone: {found}"
    return None


def padding_right(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Tokens after each item's length, with attention_mask 0, leave the real tokens' outputs unchanged."""
    mask = torch.arange(case.ids.size(1))[None, :] < torch.tensor(case.lengths)[:, None]  # (batch, seq)
    padded = s.call(case.ids, mask)[0]
    for i, n in enumerate(case.lengths):
        found = diff(padded[i:i + 1, :n], s.call(case.ids[i:i + 1, :n])[0])
        if found:
            return f"right padding changed item {i}'s real tokens (length {n}): {found}"
    return None


def padding_left(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Padding before each item (attention_mask 0, position ids counting real tokens) leaves the real tokens' outputs unchanged."""
    seq = case.ids.size(1)
    mask = torch.arange(seq)[None, :] >= (seq - torch.tensor(case.lengths))[:, None]  # (batch, seq)
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
    padded = s.call(case.ids, mask, positions)[0]
    for i, n in enumerate(case.lengths):
        found = diff(padded[i:i + 1, seq - n:], s.call(case.ids[i:i + 1, seq - n:])[0])
        if found:
            return f"left padding changed item {i}'s real tokens (length {n}): {found}"
    return None


def future_independence(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Changing tokens after position p leaves outputs up to p unchanged."""
    p = draw(st.integers(0, case.ids.size(1) - 2), "edit_after")
    edited = case.ids.clone()
    edited[:, p + 1:] = (edited[:, p + 1:] + 1) % VOCAB
    found = diff(s.call(edited)[0][:, : p + 1], s.call(case.ids)[0][:, : p + 1])
    return f"editing tokens after position {p} changed outputs at positions <= {p}: {found}" if found else None


def kv_cache(s: ModelSubject, case: ModelCase, draw: Draw) -> Optional[str]:
    """Prefill a prefix with use_cache, then decode the rest one token at a time: equal to one full forward."""
    seq = case.ids.size(1)
    prefix = draw(st.integers(1, seq - 1), "prefill")
    full = s.call(case.ids)[0]
    outputs, cache = [], None
    for start, stop in [(0, prefix)] + [(i, i + 1) for i in range(prefix, seq)]:
        out, cache = s.call(case.ids[:, start:stop], positions=torch.arange(start, stop)[None].expand(case.ids.size(0), -1),
                            past=cache, use_cache=True)
        outputs.append(out)
    found = diff(torch.cat(outputs, dim=1), full)
    return f"prefill {prefix} then decode one token at a time: the outputs differ from one full forward: {found}" if found else None


def _always(s: ModelSubject) -> Optional[str]:
    return None


def _takes_mask(s: ModelSubject) -> Optional[str]:
    return None if "attention_mask" in s.names else "forward takes no attention_mask"


def _left_applies(s: ModelSubject) -> Optional[str]:
    if "attention_mask" not in s.names or "position_ids" not in s.names:
        return "left padding needs attention_mask and position_ids"
    return None


def _causal_applies(s: ModelSubject) -> Optional[str]:
    return None if s.causal else "not a causal model (later tokens change earlier outputs)"


def _cache_applies(s: ModelSubject) -> Optional[str]:
    if not s.causal or s.past is None:
        return "not a causal model with a cache argument (past_key_values)"
    return None


def model_properties() -> tuple[Any, ...]:
    from shapecheck.testing.properties import Property  # one Property type for both suites

    return (
        Property("deterministic_eval", deterministic_eval, _always, "eval mode is deterministic (built with dropout > 0)"),
        Property("batch_independence", batch_independence, _always, "item i of a batch equals item i alone"),
        Property("padding_right", padding_right, _takes_mask, "right padding with attention_mask 0 changes no real token"),
        Property("padding_left", padding_left, _left_applies, "left padding with position ids changes no real token"),
        Property("future_independence", future_independence, _causal_applies, "later tokens do not change earlier outputs"),
        Property("kv_cache", kv_cache, _cache_applies, "incremental decoding through the cache equals one full forward"),
    )

