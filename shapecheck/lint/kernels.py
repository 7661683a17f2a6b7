"""The fused attention kernels lint knows, with their signatures: the one table the rules read (the dropout
probability's position and keyword, and which calls a kernel can take at all).

A kernel is known only where the call's origin is its package: ``torch.nn.functional``, ``flash_attn`` (version 2;
flash-attn 3's ``flash_attn_interface`` and 4's ``flash_attn.cute`` take other arguments), ``xformers.ops``. Every
keyword a released version took is listed, and the positional count is the largest any took: a call is refused only
where no version would bind it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """What a callable takes, as Python binds a call to it."""

    positional: tuple[str, ...]  # by position (and by keyword but the first ``only_positional``), in order
    required: int  # how many of them have no default
    keyword_only: tuple[str, ...] = ()  # after ``*`` or ``*args``
    keyword_required: frozenset[str] = frozenset()  # those of them with no default
    only_positional: int = 0  # before ``/``
    varargs: bool = False  # ``*args``
    varkw: bool = False  # ``**kwargs``
    dropout: str = "dropout_p"  # a kernel's dropout probability parameter
    layout: str = ""  # the memory layout a kernel reads its queries in (HEADS_FIRST or SEQ_FIRST), where one
    mask: str = ""  # a kernel's mask or additive bias parameter
    text: str = ""  # how it is shown, where the parameters above are not all it is known by (torch's overloads)

    def shown(self) -> str:
        if self.text:
            return self.text
        parts = [p if k < self.required else f"{p}=..." for k, p in enumerate(self.positional)]
        if self.only_positional:
            parts.insert(self.only_positional, "/")
        if self.varargs:
            parts.append("*args")
        elif self.keyword_only:
            parts.append("*")
        parts += [p if p in self.keyword_required else f"{p}=..." for p in self.keyword_only]
        return f"({', '.join(parts + (['**kwargs'] if self.varkw else []))})"


HEADS_FIRST, SEQ_FIRST = "(batch, heads, seq, d_head)", "(batch, seq, heads, d_head)"
_FA2_OPTIONS = ("dropout_p", "softmax_scale", "causal", "window_size", "softcap", "alibi_slopes", "deterministic",
                "return_attn_probs")
KERNELS: dict[str, Signature] = {
    "scaled_dot_product_attention": Signature(
        ("query", "key", "value", "attn_mask", "dropout_p", "is_causal"), 3, ("scale", "enable_gqa"),
        layout=HEADS_FIRST, mask="attn_mask"),
    "flash_attn_func": Signature(("q", "k", "v", *_FA2_OPTIONS), 3, layout=SEQ_FIRST),
    "flash_attn_qkvpacked_func": Signature(("qkv", *_FA2_OPTIONS), 1),
    "flash_attn_kvpacked_func": Signature(("q", "kv", *_FA2_OPTIONS), 2, layout=SEQ_FIRST),
    "flash_attn_varlen_func": Signature(
        ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k", *_FA2_OPTIONS,
         "block_table"), 7),
    "memory_efficient_attention": Signature(
        ("query", "key", "value", "attn_bias", "p", "scale"), 3, ("op", "output_dtype"), dropout="p",
        layout=SEQ_FIRST, mask="attn_bias"),
}
# where each kernel's signature above holds: the modules a call must come from
ORIGINS: dict[str, frozenset[str]] = {
    "scaled_dot_product_attention": frozenset({"torch.nn.functional"}),
    "memory_efficient_attention": frozenset({"xformers.ops", "xformers.ops.fmha"}),
    **{name: frozenset({"flash_attn", "flash_attn.flash_attn_interface"})
       for name in KERNELS if name.startswith("flash_attn")},
}

# fused attention -> the position of its dropout probability, and xformers' keyword for it
FUSED_ATTENTION: dict[str, int] = {name: s.positional.index(s.dropout) for name, s in KERNELS.items()}
FUSED_DROPOUT_KEYWORD: dict[str, str] = {name: s.dropout for name, s in KERNELS.items() if s.dropout != "dropout_p"}
LAYOUT: dict[str, str] = {name: s.layout for name, s in KERNELS.items() if s.layout}
# kernels that read (query, key, value) by position first; kernels with a mask -> (its keyword, its position)
QKV_FIRST = frozenset(name for name, s in KERNELS.items() if s.positional[1:2] in (("k",), ("key",)))
MASKED: dict[str, tuple[str, int]] = {name: (s.mask, s.positional.index(s.mask)) for name, s in KERNELS.items()
                                      if s.mask}
