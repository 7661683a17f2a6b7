"""The model kinds ``shapecheck report`` knows: how to build each reference module, feed it, and its rows.

``MODELS[name]`` is a ``ModelKind``: ``build(sizes)`` constructs the
reference module (call it inside ``params.on_meta``), ``inputs(sizes, batch,
seq, device)`` makes its inputs, ``run(module, inputs)`` does one forward pass,
``rows(sizes)`` lists its ``RowSpec``s in forward order, and
``attention_paths(sizes)`` names the modules that compute QKᵀ and softmax·V
themselves (for the dispatch counter's part labels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shapecheck.catalog import KINDS, Kind, Sizes
from shapecheck.counting import formulas as f
from shapecheck.counting.rows import (
    RowSpec, attention_rows, embedding_row, ffn_rows, join, linear_row, norm_row, residual_row,
)


@dataclass(frozen=True)
class ModelKind:
    """A catalogue kind (``shapecheck.catalog.KINDS``) with the rows report lists for it."""

    kind: Kind
    rows: Callable[[Sizes], list[RowSpec]]
    attention_paths: Callable[[Sizes], list[str]]
    probes: tuple = ("", None)  # row prefixes of the first attention block and the first layer (crossovers)

    def __getattr__(self, name: str) -> Any:  # name, help, build, inputs, run, uses, learned_positions
        return getattr(self.kind, name)


# --- mha, and the Transformer's encoder / decoder (reference_models.transformer) --------------------




def _mha_rows(prefix: str) -> list[RowSpec]:
    names = {p: join(prefix, f"{p}_proj") for p in ("q", "k", "v")}
    return attention_rows(prefix, names["q"], names["k"], names["v"], join(prefix, "out_proj"))










def encoder_layer_rows(layer: str) -> list[RowSpec]:
    """Post-norm encoder layer (Vaswani et al. 2017, section 3.1): attention, norm1, FFN (ReLU), norm2."""
    ffn = join(layer, "ffn")
    rows = _mha_rows(join(layer, "self_attn")) + [norm_row(join(layer, "norm1"))]
    rows += ffn_rows(join(ffn, "w_1"), join(ffn, "w_2"), "relu", join(ffn, "activation"))
    return rows + [norm_row(join(layer, "norm2")), residual_row(layer, 2)]


def decoder_layer_rows(layer: str) -> list[RowSpec]:
    """Decoder layer: masked self-attention, norm1, encoder-decoder attention, norm2, FFN, norm3."""
    ffn = join(layer, "ffn")
    rows = _mha_rows(join(layer, "self_attn")) + [norm_row(join(layer, "norm1"))]
    rows += _mha_rows(join(layer, "cross_attn")) + [norm_row(join(layer, "norm2"))]
    rows += ffn_rows(join(ffn, "w_1"), join(ffn, "w_2"), "relu", join(ffn, "activation"))
    return rows + [norm_row(join(layer, "norm3")), residual_row(layer, 3)]


def _stack(prefix: str, layers: int, layer_rows: Callable[[str], list[RowSpec]]) -> list[RowSpec]:
    return [row for i in range(layers) for row in layer_rows(join(prefix, f"layers.{i}"))]


def _stack_paths(prefix: str, layers: int, names: tuple[str, ...]) -> list[str]:
    return [join(prefix, f"layers.{i}", n) for i in range(layers) for n in names]


def _token_embedding_rows(embed: str, shared: bool) -> list[RowSpec]:
    """Embedding(ids)·√d_model + sinusoidal positions (sections 3.4, 3.5): 2 FLOPs per element."""
    tokens = join(embed, "tokens")
    if shared:
        table = RowSpec(tokens, f.Cost(), params_at=tokens, kind="embedding", note="shared with src_embed.tokens")
    else:
        table = embedding_row(tokens, f.vocab)
    scale = RowSpec(join(embed, "scale+positions"), f.elementwise(2), kind="embedding", note="×√d_model, + PE (no parameters)")
    return [table, scale]


def _transformer_rows(sizes: Sizes) -> list[RowSpec]:
    rows = _token_embedding_rows("src_embed", False) + _stack("encoder", sizes.layers, encoder_layer_rows)
    rows += _token_embedding_rows("tgt_embed", True) + _stack("decoder", sizes.layers, decoder_layer_rows)
    generator = f.Cost(flops=2 * f.B * f.S * f.d_model * f.vocab)  # weight shared with the embeddings
    return rows + [linear_row("generator", generator, "head", "pre-softmax projection, weight shared with src_embed.tokens")]


# --- BERT (reference_models.bert) -----------------------------------------------------------------








def bert_layer_rows(layer: str) -> list[RowSpec]:
    """One BERT layer with transformers' names: attention.self.{query,key,value}, attention.output, ..."""
    core, out = join(layer, "attention.self"), join(layer, "attention.output")
    rows = attention_rows(core, join(core, "query"), join(core, "key"), join(core, "value"), join(out, "dense"))
    rows.append(norm_row(join(out, "LayerNorm")))
    rows += ffn_rows(join(layer, "intermediate.dense"), join(layer, "output.dense"), "gelu", join(layer, "intermediate.activation"))
    return rows + [norm_row(join(layer, "output.LayerNorm")), residual_row(layer, 2)]


def bert_rows(sizes: Sizes, prefix: str = "", pooler: bool = True) -> list[RowSpec]:
    """Embeddings (token + position + segment, LayerNorm), the encoder, and the pooler (Devlin et al. 2019)."""
    emb = join(prefix, "embeddings")
    rows = [
        embedding_row(join(emb, "word_embeddings"), f.vocab),
        embedding_row(join(emb, "position_embeddings"), f.max_seq, "learned positions"),
        embedding_row(join(emb, "token_type_embeddings"), f.segments),
        RowSpec(join(emb, "sum"), f.elementwise(2), kind="embedding", note="token + segment + position"),
        norm_row(join(emb, "LayerNorm")),
    ]
    encoder = join(prefix, "encoder")
    rows += [row for i in range(sizes.layers) for row in bert_layer_rows(join(encoder, f"layer.{i}"))]
    if not pooler:
        return rows
    pooler = join(prefix, "pooler")
    rows.append(linear_row(join(pooler, "dense"), f.linear(f.d_model, f.d_model, f.B), "head", "first token only"))
    rows.append(RowSpec(join(pooler, "activation"), f.activation("tanh", f.d_model, f.B), kind="head", note="tanh"))
    return rows


def bert_lm_rows(sizes: Sizes) -> list[RowSpec]:
    """BertModel without a pooler, plus seed 001's heads: next-sentence (d_model -> 2, first token) and
    masked LM (d_model -> vocab)."""
    tokens = f.B * f.S
    return bert_rows(sizes, "bert", pooler=False) + [
        linear_row("next_sentence.linear", f.linear(f.d_model, 2, f.B), "head", "first token only"),
        RowSpec("next_sentence.log_softmax", f.log_softmax(2, f.B), kind="head"),
        linear_row("mask_lm.linear", f.linear(f.d_model, f.vocab, tokens), "head"),
        RowSpec("mask_lm.log_softmax", f.log_softmax(f.vocab, tokens), kind="head"),
    ]


def _bert_attention(sizes: Sizes, prefix: str = "") -> list[str]:
    return [join(prefix, f"encoder.layer.{i}.attention.self") for i in range(sizes.layers)]


# --- GPT-2 (reference_models.gpt2) ----------------------------------------------------------------




def gpt2_block_rows(block: str) -> list[RowSpec]:
    """Pre-norm block (Radford et al. 2019): ln_1, attention with fused c_attn, ln_2, MLP (GELU tanh)."""
    attn, mlp = join(block, "attn"), join(block, "mlp")
    rows = [norm_row(join(block, "ln_1"))]
    rows += attention_rows(attn, "", "", "", join(attn, "c_proj"), qkv=join(attn, "c_attn"))
    rows.append(norm_row(join(block, "ln_2")))
    rows += ffn_rows(join(mlp, "c_fc"), join(mlp, "c_proj"), "gelu_tanh", join(mlp, "activation"))
    return rows + [residual_row(block, 2)]


def gpt2_rows(sizes: Sizes) -> list[RowSpec]:
    rows = [
        embedding_row("wte", f.vocab),
        embedding_row("wpe", f.max_seq, "learned positions"),
        RowSpec("wte+wpe", f.elementwise(1), kind="embedding", note="token + position"),
    ]
    rows += [row for i in range(sizes.layers) for row in gpt2_block_rows(f"h.{i}")]
    return rows + [norm_row("ln_f")]


def gpt2_lm_rows(sizes: Sizes) -> list[RowSpec]:
    head = f.Cost(flops=2 * f.B * f.S * f.d_model * f.vocab)
    return gpt2_rows(sizes) + [
        RowSpec("lm_head", head, flops_at="", part="matmul", kind="head", note="logits = h · wteᵀ (tied to wte)")
    ]




# --- the table ----------------------------------------------------------------------------------


MODELS: dict[str, ModelKind] = {
    name: ModelKind(KINDS[name], rows, paths, probes)
    for name, rows, paths, probes in (
        ("mha", lambda s: _mha_rows(""), lambda s: [""], ("", None)),
        ("encoder", lambda s: _stack("", s.layers, encoder_layer_rows), lambda s: _stack_paths("", s.layers, ("self_attn",)),
         ("layers.0.self_attn", "layers.0")),
        ("decoder", lambda s: _stack("", s.layers, decoder_layer_rows),
         lambda s: _stack_paths("", s.layers, ("self_attn", "cross_attn")), ("layers.0.self_attn", "layers.0")),
        ("encoder-decoder", _transformer_rows,
         lambda s: _stack_paths("encoder", s.layers, ("self_attn",)) + _stack_paths("decoder", s.layers, ("self_attn", "cross_attn")),
         ("encoder.layers.0.self_attn", "encoder.layers.0")),
        ("bert", bert_rows, _bert_attention, ("encoder.layer.0.attention", "encoder.layer.0")),
        ("bert-lm", bert_lm_rows, lambda s: _bert_attention(s, "bert"), ("bert.encoder.layer.0.attention", "bert.encoder.layer.0")),
        ("gpt", gpt2_rows, lambda s: [f"h.{i}.attn" for i in range(s.layers)], ("h.0.attn", "h.0")),
        ("gpt-lm", gpt2_lm_rows, lambda s: [f"h.{i}.attn" for i in range(s.layers)], ("h.0.attn", "h.0")),
    )
}
