"""Per-token FLOP estimates from the literature, each with its convention, and model FLOPs utilisation.

- ``2N`` / ``6N`` (Kaplan et al. 2020, section 2.1): N non-embedding parameters, 2 FLOPs per parameter
  per token forward, 6 for forward + backward; attention scores left out.
- Kaplan et al. 2020, Table 1: C_forward = 2N + 2·n_layer·n_ctx·d_attn (the context term counts QKᵀ and
  softmax·V, each n_ctx·d_attn multiply-adds per layer per token, full, not the causal half).
- Chinchilla (Hoffmann et al. 2022, Appendix F): embeddings as a matmul (2·S·vocab·d_model), q/k/v/o
  projections with h·d_head, the full S×S logits and reductions, softmax 3 per score, a two-matrix dense
  block of width d_ff, the final logits; backward = 2 × forward.
- Megatron (Narayanan et al. 2021, section 5.1, eq. 3 without recomputation): 72·l·h²·s·(1 + s/(6h) +
  V/(12·l·h)) FLOPs per sequence of s tokens for a GPT layer of width h with d_ff = 4h and full attention.
- ``--causal-flops half``: flash kernels skip the masked half of the S×S scores; the attention core counts half.
"""

from __future__ import annotations

PEAK_TFLOPS = {  # dense 16-bit tensor-core peaks from the vendors' datasheets (no sparsity)
    "V100": 125.0,  # NVIDIA V100 SXM2 datasheet
    "A100": 312.0,  # NVIDIA A100 datasheet, BF16/FP16 dense
    "A10G": 70.0,  # AWS/NVIDIA A10G, FP16 dense
    "L4": 121.0,  # NVIDIA L4 datasheet, FP16 dense
    "H100": 989.0,  # NVIDIA H100 SXM datasheet, BF16 dense
    "H200": 989.0,  # NVIDIA H200 SXM datasheet, BF16 dense
    "MI300X": 1307.0,  # AMD Instinct MI300X datasheet, FP16 dense
}


def chinchilla(layers: int, seq: int, d_attn: int, heads: int, d_model: int, d_ff: int, vocab: int) -> int:
    """Hoffmann et al. 2022, Appendix F: forward FLOPs of one sequence of ``seq`` tokens."""
    embeddings = 2 * seq * vocab * d_model
    attention = (2 * 3 * seq * d_model * d_attn + 2 * seq * seq * d_attn + 3 * heads * seq * seq
                 + 2 * seq * seq * d_attn + 2 * seq * d_attn * d_model)
    dense = 2 * seq * (d_model * d_ff + d_model * d_ff)
    return embeddings + layers * (attention + dense) + 2 * seq * d_model * vocab


def estimates(n: int, layers: int, seq: int, d_attn: int, d_model: int, vocab: int, heads: int = 0,
              d_ff: int = 0) -> dict[str, dict[str, object]]:
    """Per-token forward and train FLOPs by each formula, with its convention."""
    kaplan = 2 * n + 2 * layers * seq * d_attn
    hoffmann = chinchilla(layers, seq, d_attn, heads, d_model, d_ff, vocab) // seq if seq else 0
    megatron = 72 * layers * d_model**2 * seq * (1 + seq / (6 * d_model) + vocab / (12 * layers * d_model)) / seq if layers and d_model else 0
    return {
        "2N/6N": {"forward": 2 * n, "train": 6 * n,
                  "convention": "Kaplan et al. 2020 §2.1: N non-embedding parameters, attention scores left out"},
        "kaplan": {"forward": kaplan, "train": 3 * kaplan,
                   "convention": "Kaplan et al. 2020 Table 1: 2N + 2·n_layer·n_ctx·d_attn, full S×S scores"},
        "chinchilla": {"forward": hoffmann, "train": 3 * hoffmann,
                       "convention": "Hoffmann et al. 2022 App. F: embedding as a matmul, full S×S scores, softmax "
                                     "3/score, a two-matrix MLP of width d_ff (a gated MLP's third matrix left out)"},
        "megatron": {"forward": round(megatron / 3), "train": round(megatron),
                     "convention": "Narayanan et al. 2021 eq. 3 (no recomputation): GPT layers, d_ff = 4·d_model, "
                                   "logits included, full S×S scores"},
    }


def mfu(train_flops_per_token: int, tokens_per_second: float, peak_tflops: float) -> float:
    """Model FLOPs utilisation (Chowdhery et al. 2022, App. B): achieved model FLOPs / peak FLOPs."""
    return train_flops_per_token * tokens_per_second / (peak_tflops * 1e12)
