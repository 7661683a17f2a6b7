"""How much of modern transformers anatomy ``shapecheck report`` recognises, and whether it ever says ✗ on a
correct model.

    python benchmarks/bench_report_anatomy.py [--half dev|held-out|both]

Each class below is built on meta from a small config and reported in forward mode. Per class: the attention
and feed-forward/expert blocks (modules whose class name ends in Attention, MLP, FeedForward, MoE, SparseMoeBlock
... as transformers names them) and how many of them carry a whole-block closed form (a row of kind attention, mlp, gated_mlp or moe at that
module or at one holding it; a block split into Linear rows is not counted), and the rows marked ✗ (a measured value that disagrees with its formula: on these correct
models every ✗ is a false alarm). The classes are split at random (seed 21) into a development half, used
while teaching the recogniser, and a held-out half, measured once at the end.
"""

from __future__ import annotations

import argparse
import random
import re

import torch
import transformers

transformers.logging.set_verbosity_error()

from shapecheck.counting.tree import Settings, model_report

T = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, vocab_size=128)
CASES = {  # class -> config (small); the reason it is here
    "Qwen3ForCausalLM": lambda: transformers.Qwen3Config(**T, num_key_value_heads=2, head_dim=16),  # q/k norms
    "Olmo2ForCausalLM": lambda: transformers.Olmo2Config(**T, num_key_value_heads=2),  # q/k norms over all heads
    "Gemma3ForCausalLM": lambda: transformers.Gemma3TextConfig(**T, num_key_value_heads=2, head_dim=16),  # q/k norms
    "Phi3ForCausalLM": lambda: transformers.Phi3Config(**T, num_key_value_heads=2, pad_token_id=0),  # packed qkv
    "GPTNeoXForCausalLM": lambda: transformers.GPTNeoXConfig(**T),  # interleaved packed qkv
    "GPTBigCodeForCausalLM": lambda: transformers.GPTBigCodeConfig(n_embd=64, n_layer=2, n_head=4, vocab_size=128,
                                                                   multi_query=True),  # multi-query
    "MptForCausalLM": lambda: transformers.MptConfig(d_model=64, n_heads=4, n_layers=2, vocab_size=128, max_seq_len=256),  # ALiBi
    "DeepseekV3ForCausalLM": lambda: transformers.DeepseekV3Config(
        **T, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
        v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=1, topk_group=1),  # multi-head latent attention, shared + routed experts
    "Qwen2MoeForCausalLM": lambda: transformers.Qwen2MoeConfig(
        **T, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=48),  # shared + routed experts
    "SwinModel": lambda: transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
                                                 num_heads=[2, 4], window_size=4),  # relative-position tables
    "T5Model": lambda: transformers.T5Config(d_model=64, d_kv=16, d_ff=96, num_layers=2, num_heads=4, vocab_size=128),
    "BloomForCausalLM": lambda: transformers.BloomConfig(hidden_size=64, n_layer=2, n_head=4, vocab_size=128),  # ALiBi, packed
    "FalconForCausalLM": lambda: transformers.FalconConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                           vocab_size=128, new_decoder_architecture=True, num_kv_heads=2),
    "OPTForCausalLM": lambda: transformers.OPTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                     ffn_dim=96, vocab_size=128, word_embed_proj_dim=64),
    "StableLmForCausalLM": lambda: transformers.StableLmConfig(**T, num_key_value_heads=2),
    "CohereForCausalLM": lambda: transformers.CohereConfig(**T, num_key_value_heads=2, use_qk_norm=True),
    "GemmaForCausalLM": lambda: transformers.GemmaConfig(**T, num_key_value_heads=2, head_dim=16),
    "PhiForCausalLM": lambda: transformers.PhiConfig(**T),
    "OlmoeForCausalLM": lambda: transformers.OlmoeConfig(**T, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2),
    "GraniteForCausalLM": lambda: transformers.GraniteConfig(**T, num_key_value_heads=2),
    "DeiTModel": lambda: transformers.DeiTConfig(**T, image_size=32, patch_size=8),
    "Dinov2Model": lambda: transformers.Dinov2Config(**T, image_size=32, patch_size=8),
    "Starcoder2ForCausalLM": lambda: transformers.Starcoder2Config(**T, num_key_value_heads=2),
    "GPTJForCausalLM": lambda: transformers.GPTJConfig(n_embd=64, n_layer=2, n_head=4, vocab_size=128, rotary_dim=8),
}
SEED = 21
BLOCK = re.compile(r"(Attention|MLP|FeedForward|MoE|Moe|SparseMoeBlock|Experts)$")


def halves() -> dict[str, list[str]]:
    names = sorted(CASES)
    random.Random(SEED).shuffle(names)
    return {"dev": sorted(names[: len(names) // 2]), "held-out": sorted(names[len(names) // 2:])}


def measure(name: str) -> dict:
    with torch.device("meta"):
        model = getattr(transformers, name)(CASES[name]())
    report = model_report(model, name, Settings(batch=1, seq_len=16, fold=False))
    formula = [r.path for r in report.rows if r.flops_formula is not None and r.kind not in ("linear", "norm", "embedding")]
    blocks = [p for p, m in model.named_modules() if BLOCK.search(type(m).__name__)
              and not any(p.startswith(q + ".") for q, n in model.named_modules() if q != p and BLOCK.search(type(n).__name__) and p.startswith(q + "."))]
    covered = [p for p in blocks if any(p == f or p.startswith(f + ".") for f in formula)]
    wrong = [r.path for r in report.rows if not r.agrees]
    return {"blocks": len(blocks), "covered": len(covered), "wrong": wrong, "missing": [p for p in blocks if p not in covered]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", choices=("dev", "held-out", "both"), default="dev")
    args = parser.parse_args()
    for half, names in halves().items():
        if args.half not in (half, "both"):
            continue
        totals = [0, 0, 0, 0]
        print(f"## {half} ({len(names)} classes, seed {SEED})")
        for name in names:
            try:
                found = measure(name)
            except Exception as error:  # noqa: BLE001 - a class that cannot be reported is a result too
                print(f"{name}: fails: {str(error).splitlines()[0][:100]}")
                totals[3] += 1
                continue
            totals[0] += found["blocks"]
            totals[1] += found["covered"]
            totals[2] += len(found["wrong"])
            print(f"{name}: {found['covered']}/{found['blocks']} blocks with a closed form; ✗ rows: "
                  f"{len(found['wrong'])} {found['wrong'][:3]}; without a formula: {found['missing'][:2]}")
        print(f"{half}: {totals[1]}/{totals[0]} blocks recognised; {totals[2]} ✗ rows on correct models; "
              f"{totals[3]} classes failed to report")


if __name__ == "__main__":
    main()
