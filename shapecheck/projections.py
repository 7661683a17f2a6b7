"""The one table of attention projection names, shared by ``shapecheck audit`` and ``shapecheck verify``.

Each ``Style`` names a family's q/k/v projections (three names, or one fused or
packed name) and its output projection names, tried in order. Names may be
dotted (``output.dense``, ``linears.3``). Audit matches a block holding two of
the three, with or without its output; verify needs all of them, builds its
float64 reference from them, and so also reads how a fused weight is laid out:

- ``stacked``: one (3·d, d) weight that is [q; k; v], chunked in three
  (torch's ``in_proj_weight``, GPT-2's ``c_attn``, timm's ``qkv``);
- ``interleaved``: rows grouped per head as [q_h; k_h; v_h] (GPT-NeoX and
  BLOOM's ``query_key_value``); chunking it in three would mix heads, so
  verify does not build a reference from it.

``bias`` marks torch's packed styles: their q/k/v names are bare weight
parameters in (out, in) layout, and the named bias (``in_proj_bias``) holds the
q, k and v biases, a third each. Other styles' names must be modules (Linear,
GPT-2's Conv1D, or a container's first Linear): verify never guesses the
orientation of a bare ``wq`` parameter.
``residual`` names outputs after which the family adds its input back (seed
002's ``fuse_heads`` is followed by an identity shortcut): audit counts them as
the output projection, verify does not build its reference through them.
``output_optional`` marks the one family whose attention module may lack its
output projection (BERT keeps ``output.dense`` in the parent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FusedLayout = Literal["stacked", "interleaved"]


@dataclass(frozen=True)
class Style:
    """One naming family: q/k/v names (or one fused name) and its output projection names."""

    label: str
    qkv: tuple[str, ...]  # (q, k, v) names, or one fused/packed name
    outputs: tuple[str, ...]
    fused: FusedLayout = "stacked"  # only read when ``qkv`` is one name
    bias: str = ""  # torch's packed styles: bare weight parameters, and their bias split in three
    output_optional: bool = False
    residual: tuple[str, ...] = ()  # outputs followed by a shortcut: not for verify's reference

    @property
    def pattern(self) -> str:
        """The label without its parenthesised note, e.g. ``c_attn + c_proj``."""
        return self.label.split(" (")[0]

    @property
    def verifiable(self) -> bool:
        """Whether q, k and v can be read off these weights for a reference computation."""
        return len(self.qkv) == 3 or self.fused == "stacked"


STYLES: tuple[Style, ...] = (
    Style("q_proj/k_proj/v_proj + out_proj", ("q_proj", "k_proj", "v_proj"), ("out_proj", "o_proj")),
    Style("query/key/value + dense (BERT)", ("query", "key", "value"), ("dense", "output.dense", "output", "out"), output_optional=True),
    Style("in_proj_weight + out_proj (packed)", ("in_proj_weight",), ("out_proj", "fuse_heads"), bias="in_proj_bias", residual=("fuse_heads",)),
    Style("q/k/v_proj_weight + out_proj (packed, kdim/vdim)", ("q_proj_weight", "k_proj_weight", "v_proj_weight"), ("out_proj",), bias="in_proj_bias"),
    Style("c_attn + c_proj (fused)", ("c_attn",), ("c_proj",)),
    Style("qkv + proj (fused)", ("qkv",), ("proj", "out_proj")),
    Style("qkv_proj + o_proj (fused, Phi-3)", ("qkv_proj",), ("o_proj",)),
    Style("Wqkv + out_proj (fused, MPT)", ("Wqkv",), ("out_proj",)),
    Style("query_key_value + dense (fused)", ("query_key_value",), ("dense",), fused="interleaved"),
    Style("to_q/to_k/to_v + to_out", ("to_q", "to_k", "to_v"), ("to_out",)),
    Style("to_qkv + to_out (fused, einops code)", ("to_qkv",), ("to_out",)),
    Style("wq/wk/wv + wo", ("wq", "wk", "wv"), ("wo",)),
    Style("q/k/v + o", ("q", "k", "v"), ("o",)),
    Style("q_lin/k_lin/v_lin + out_lin", ("q_lin", "k_lin", "v_lin"), ("out_lin",)),
    Style("linear_layers[0..2] + output_layer (seed 001)", ("linear_layers.0", "linear_layers.1", "linear_layers.2"), ("output_layer",)),
    Style("linears[0..3] (Annotated Transformer)", ("linears.0", "linears.1", "linears.2"), ("linears.3",)),
)


# Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, section 2.1): the query from ``q_proj`` or the low-rank
# pair ``q_a_proj`` -> ``q_b_proj``; keys and values from one latent ``kv_a_proj_with_mqa`` (kv_lora_rank + the shared
# rotary key width) expanded per head by ``kv_b_proj``. Not a ``Style``: no q/k/v weights for verify to read.
LATENT = {"q": "q_proj", "q_a": "q_a_proj", "q_b": "q_b_proj", "kv_a": "kv_a_proj_with_mqa", "kv_b": "kv_b_proj"}


# Output projection names audit tries, in order, after a block's own style's outputs (a family may name its
# output otherwise, and a block may hold only its output, as BERT's attention.output.dense).
OUTPUT_NAMES = ("out_proj", "o_proj", "fuse_heads", "dense", "output.dense", "c_proj", "proj", "to_out", "wo", "o", "out_lin", "output_layer", "linear_out", "out")


def lookup(module: object, dotted: str) -> object:
    """``module.a.b`` for ``"a.b"`` (ModuleList items by index), or None where any step is missing."""
    for part in dotted.split("."):
        module = _attribute(module, part)
        if module is None:
            return None
    return module


_MODULE_STORES = ("_parameters", "_buffers", "_modules")


def _module_getattr(kind: type) -> bool:
    """Whether ``kind`` finds missing attributes with ``nn.Module.__getattr__`` alone (not a ``__getattr__`` of its own)."""
    return getattr(getattr(kind, "__getattr__", None), "__qualname__", None) == "Module.__getattr__"


def _attribute(owner: object, name: str) -> object:
    """``getattr(owner, name, None)``, without raising and catching for a name an ``nn.Module`` does not have
    (the recogniser asks every module for every projection name: most are missing)."""
    own = getattr(owner, "__dict__", None)
    if own is not None and "_modules" in own and _module_getattr(type(owner)):
        if name in own:
            return own[name]
        for store in _MODULE_STORES:
            if name in own[store]:
                return own[store][name]
        if not hasattr(type(owner), name):
            return None
    return getattr(owner, name, None)
