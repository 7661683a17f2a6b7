"""``Sizes``: the numbers a catalogue model is built from, and the small probe sizes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shapecheck.errors import UsageError

# A small instance of any catalogue model (audit's dead-parameter pass): layer count kept, widths shrunk.
PROBE: dict[str, int] = dict(d_model=16, heads=2, d_ff=32, vocab=97, max_seq=16)


@dataclass(frozen=True)
class Sizes:
    """The numbers a model is built from (already validated)."""

    d_model: int
    heads: int
    d_k: int
    d_v: int
    d_ff: int
    layers: int
    vocab: int
    max_seq: int
    segments: int = 2
    impl: str = "sdpa"
    kv_heads: int = 0  # key/value heads of grouped-query attention (0: as many as heads)
    window: int = 0  # sliding-window attention span (0: none)
    experts: int = 0  # mixture-of-experts experts per layer (0: a dense MLP)
    top_k: int = 2  # experts each token is routed to
    qkv_bias: bool = False
    tie_embeddings: bool = False


def make_sizes(values: dict[str, Any]) -> Sizes:
    """``Sizes`` from a preset's values, d_k = d_v = d_model / heads unless given."""
    if values["d_model"] % values["heads"] and not ("d_k" in values and "d_v" in values):
        raise UsageError(f"--d-model {values['d_model']} is not divisible by --heads {values['heads']}")
    d_head = max(values["d_model"] // values["heads"], 1)
    known = {k: v for k, v in values.items() if k in Sizes.__dataclass_fields__}
    return Sizes(**{"d_k": d_head, "d_v": d_head, **known})
