"""The model kinds shapecheck builds by name: a reference module from ``Sizes``, its inputs, one run.

``KINDS[name].build(sizes)`` constructs the module (call it inside
``shapecheck.counting.params.on_meta`` for no weights), ``inputs(sizes, batch,
seq, device)`` makes a forward pass's arguments and ``run(module, inputs)`` runs
it. ``uses`` lists the sizes the kind reads beyond d_model and heads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from shapecheck.catalog.sizes import Sizes
from shapecheck.errors import UsageError


@dataclass(frozen=True)
class Kind:
    name: str
    help: str
    family: str  # kinds of one family share presets: transformer | bert | gpt
    build: Callable[[Sizes], nn.Module]
    inputs: Callable[[Sizes, int, int, torch.device], tuple]
    run: Callable[[nn.Module, tuple], Any] = lambda module, inputs: module(*inputs)
    uses: frozenset = frozenset()  # which of layers, d_ff, vocab, max_seq, d_k, impl the model reads
    learned_positions: bool = False  # seq_len may not exceed max_seq


def _hidden(sizes: Sizes, batch: int, seq: int, device: torch.device) -> tuple:
    return (torch.zeros(batch, seq, sizes.d_model, device=device),)


def _ids(sizes: Sizes, batch: int, seq: int, device: torch.device) -> tuple:
    return (torch.zeros(batch, seq, dtype=torch.long, device=device),)


def _mha(sizes: Sizes) -> nn.Module:
    from reference_models.attention import AttentionConfig, MultiHeadAttention

    config = AttentionConfig(sizes.d_model, sizes.heads, d_k=sizes.d_k, d_v=sizes.d_v, impl=sizes.impl)
    return MultiHeadAttention(config=config)


def _transformer_config(sizes: Sizes) -> Any:
    from reference_models.transformer import TransformerConfig

    return TransformerConfig(
        vocab=sizes.vocab, d_model=sizes.d_model, layers=sizes.layers, heads=sizes.heads, d_ff=sizes.d_ff,
        d_k=sizes.d_k, d_v=sizes.d_v, max_seq=sizes.max_seq, impl=sizes.impl,
    )


def _transformer_part(part: str) -> Callable[[Sizes], nn.Module]:
    def build(sizes: Sizes) -> nn.Module:
        import reference_models.transformer as transformer

        return getattr(transformer, part)(_transformer_config(sizes))

    return build


def _bert_config(sizes: Sizes) -> Any:
    from reference_models.bert import BertConfig

    return BertConfig(
        vocab=sizes.vocab, d_model=sizes.d_model, layers=sizes.layers, heads=sizes.heads, d_ff=sizes.d_ff,
        max_seq=sizes.max_seq, segments=sizes.segments,
    )


def _bert_part(part: str) -> Callable[[Sizes], nn.Module]:
    def build(sizes: Sizes) -> nn.Module:
        import reference_models.bert as bert

        return getattr(bert, part)(_bert_config(sizes))

    return build


def _gpt2(sizes: Sizes) -> nn.Module:
    from reference_models.gpt2 import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(
        vocab=sizes.vocab, max_seq=sizes.max_seq, d_model=sizes.d_model, layers=sizes.layers,
        heads=sizes.heads, d_ff=sizes.d_ff,
    ))


def _gpt2_lm_run(module: nn.Module, inputs: tuple) -> Any:
    return module.logits(module(*inputs))


_HEADS = frozenset({"impl", "d_k"})
_STACK = frozenset({"layers", "d_ff"})
_TABLES = frozenset({"vocab", "max_seq"})

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("mha", "one multi-head self-attention block (reference_models.attention.MultiHeadAttention)",
             "transformer", _mha, _hidden, uses=_HEADS),
        Kind("encoder", "the Transformer's encoder stack, post-norm, ReLU FFN (Vaswani et al. 2017); the default",
             "transformer", _transformer_part("Encoder"), _hidden, uses=_HEADS | _STACK),
        Kind("decoder", "the Transformer's decoder stack: masked self-attention, cross-attention to a memory of the same length, FFN",
             "transformer", _transformer_part("Decoder"), lambda s, b, n, d: _hidden(s, b, n, d) * 2, uses=_HEADS | _STACK),
        Kind("encoder-decoder", "the whole Transformer: shared embeddings, encoder, decoder, tied pre-softmax projection",
             "transformer", _transformer_part("Transformer"), lambda s, b, n, d: _ids(s, b, n, d) * 2,
             uses=_HEADS | _STACK | {"vocab"}),
        Kind("bert", "BertModel: embeddings, encoder, pooler (Devlin et al. 2019; transformers' names)",
             "bert", _bert_part("BertModel"), _ids, uses=_STACK | _TABLES, learned_positions=True),
        Kind("bert-lm", "BertLM: BertModel (no pooler) plus next-sentence and masked-LM heads (seed 001)",
             "bert", _bert_part("BertLM"), _ids, uses=_STACK | _TABLES, learned_positions=True),
        Kind("gpt", "GPT2Model: decoder-only, pre-norm, learned positions (Radford et al. 2019); the gpt2 presets",
             "gpt", _gpt2, _ids, uses=_STACK | _TABLES, learned_positions=True),
        Kind("gpt-lm", "GPT2Model plus its language-model head, tied to the token embedding",
             "gpt", _gpt2, _ids, run=_gpt2_lm_run, uses=_STACK | _TABLES, learned_positions=True),
    )
}


def get_kind(name: str) -> Kind:
    """The kind called ``name``, or a one-line ``UsageError`` naming the kinds there are."""
    if name not in KINDS:
        raise UsageError(f"unknown model {name!r}; choose one of: {', '.join(KINDS)}")
    return KINDS[name]
