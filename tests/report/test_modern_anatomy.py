"""Modern anatomy recognised with closed forms: q/k-norm attention, shared + routed experts (transformers classes
built from small configs on meta; each recognised row's formula equals the measured count)."""

from __future__ import annotations

import pytest
import torch

from shapecheck.counting.tree import Settings, model_report

transformers = pytest.importorskip("transformers")

T = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, vocab_size=128)


def report(cls: str, config, mode: str = "forward"):
    with torch.device("meta"):
        model = getattr(transformers, cls)(config)
    return model, model_report(model, cls, Settings(batch=2, seq_len=16, mode=mode, fold=False))


@pytest.mark.parametrize("cls, config", [
    ("Qwen3ForCausalLM", lambda: transformers.Qwen3Config(**T, num_key_value_heads=2, head_dim=16)),
    ("CohereForCausalLM", lambda: transformers.CohereConfig(**T, num_key_value_heads=2, use_qk_norm=True)),
])
@pytest.mark.parametrize("mode", ["forward", "train"])
def test_qk_norm_attention_is_one_attention_row_with_its_norm_gains(cls, config, mode):
    model, r = report(cls, config(), mode)
    rows = {row.path: row for row in r.rows}
    attention = rows["model.layers.0.self_attn"]
    assert attention.kind == "attention" and "qk_norm" in attention.params_formula
    norms = sum(p.numel() for name, p in model.model.layers[0].self_attn.named_parameters() if "norm" in name)
    assert attention.detail.endswith(f"qk_norm={norms}") and norms > 0
    assert r.agrees, [(x.path, x.expected_params, x.params, x.expected_flops, x.flops) for x in r.rows if not x.agrees]


def test_shared_and_routed_experts_count_every_tokens_shared_expert():
    config = transformers.DeepseekV3Config(
        **T, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
        v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=1, topk_group=1)
    model, r = report("DeepseekV3ForCausalLM", config)
    moe = next(row for row in r.rows if row.kind == "moe")
    assert "d_shared=32" in moe.detail and moe.agrees
    shared = sum(p.numel() for p in model.model.layers[1].mlp.shared_experts.parameters())
    routed = sum(p.numel() for p in model.model.layers[1].mlp.experts.parameters())
    assert moe.params == shared + routed + sum(p.numel() for p in model.model.layers[1].mlp.gate.parameters())
    per_token = 2 * (2 * 3 * 64 * 32) + 2 * 64 * 4 + 2 * 3 * 64 * 32  # k=2 routed SwiGLUs, the router, the shared one
    assert moe.flops == 2 * 16 * per_token  # batch 2 × 16 tokens
    assert r.agrees


@pytest.mark.parametrize("cls, config, path", [
    ("Phi3ForCausalLM", lambda: transformers.Phi3Config(**T, num_key_value_heads=2, pad_token_id=0),
     "model.layers.0.self_attn"),  # one qkv_proj for q, k and v of grouped heads
    ("MptForCausalLM", lambda: transformers.MptConfig(d_model=64, n_heads=4, n_layers=2, vocab_size=128,
                                                     max_seq_len=64), "transformer.blocks.0.attn"),  # Wqkv, ALiBi
])
@pytest.mark.parametrize("mode", ["forward", "train"])
def test_packed_qkv_attention_is_recognised(cls, config, path, mode):
    _, r = report(cls, config(), mode)
    row = next(row for row in r.rows if row.path == path)
    assert row.kind == "attention" and row.expected_flops == row.flops
    assert r.agrees, [(x.path, x.expected_flops, x.flops) for x in r.rows if not x.agrees]


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_qwen2_moe_shared_expert_and_its_gate(mode):
    config = transformers.Qwen2MoeConfig(**T, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                         moe_intermediate_size=32, shared_expert_intermediate_size=48)
    model, r = report("Qwen2MoeForCausalLM", config, mode)
    moe = next(row for row in r.rows if row.kind == "moe")
    assert "d_shared=48" in moe.detail and "d_gate=1" in moe.detail
    assert moe.params == sum(p.numel() for p in model.model.layers[0].mlp.parameters())
    assert r.agrees, [(x.path, x.expected_flops, x.flops) for x in r.rows if not x.agrees]


def test_swin_relative_position_table_is_a_parameter_of_its_attention_form():
    config = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
                                     window_size=4)
    model, r = report("SwinModel", config)
    row = next(row for row in r.rows if row.kind == "attention")
    table = next(p for n, p in model.encoder.layers[0].blocks[0].attention.named_parameters() if "relative" in n)
    assert row.detail.endswith(f"table={table.numel()}") and "qk_norm" not in row.detail
    assert r.agrees


class MetaFeedForward(torch.nn.Module):
    """Meta's Llama reference naming: w1 (gate), w2 (down), w3 (up), declared in that order."""

    def __init__(self, dim: int = 32, hidden: int = 80) -> None:
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden, bias=False)
        self.w2 = torch.nn.Linear(hidden, dim, bias=False)
        self.w3 = torch.nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))  # (batch, seq, dim)


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_meta_style_swiglu_w1_w2_w3_is_a_gated_mlp(mode):
    with torch.device("meta"):
        block = torch.nn.Sequential(MetaFeedForward(), torch.nn.Linear(32, 10))
    r = model_report(block, "meta", Settings(batch=2, seq_len=8, mode=mode))
    rows = {row.path: row for row in r.rows}
    assert rows["0"].kind == "gated_mlp" and rows["0"].detail == "d_model=32 d_ff=80"
    assert rows["1"].kind == "linear" and r.agrees


def test_grouped_mm_counts_as_the_per_expert_products_forward_and_backward():
    """``aten._grouped_mm`` (MoE kernels) against the same products written per group, under FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    from shapecheck.counting import flop_counter_mapping

    G, K, N, ends = 4, 16, 24, [3, 8, 8, 20]
    a, b = torch.randn(20, K, requires_grad=True), torch.randn(G, K, N, requires_grad=True)

    def counted(run) -> int:
        with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter:
            run().pow(2).sum().backward()  # a contiguous gradient, as a loss gives
        return counter.get_total_flops()

    grouped = counted(lambda: torch._grouped_mm(a, b, offs=torch.tensor(ends, dtype=torch.int32)))
    starts = [0, *ends[:-1]]
    looped = counted(lambda: torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, ends))]))
    assert grouped == looped == 3 * 2 * 20 * K * N
    batched = torch.randn(G, 5, K)
    assert counted(lambda: torch._grouped_mm(batched, b)) == 3 * 2 * G * 5 * K * N - 2 * G * 5 * K * N  # no dA


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_phi3_packed_gate_up_projection_is_one_gated_mlp(mode):
    """Phi-3's MLP: gate and up in one Linear of 2·d_ff outputs (chunked in two), then down: 3·d_model·d_ff."""
    model, r = report("Phi3ForCausalLM", transformers.Phi3Config(**T, num_key_value_heads=2, pad_token_id=0), mode)
    rows = {row.path: row for row in r.rows}
    mlp = rows["model.layers.0.mlp"]
    assert mlp.kind == "gated_mlp" and mlp.detail == "d_model=64 d_ff=96"
    assert mlp.params == sum(p.numel() for p in model.model.layers[0].mlp.parameters()) == 3 * 64 * 96
    assert mlp.flops == (3 if mode == "train" else 1) * 2 * (2 * 16) * 3 * 64 * 96
    assert r.agrees, [(x.path, x.expected_flops, x.flops) for x in r.rows if not x.agrees]


def deepseek(q_lora_rank, attention_bias=False):
    return transformers.DeepseekV3Config(
        **T, num_key_value_heads=4, q_lora_rank=q_lora_rank, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=12,
        v_head_dim=16, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
        first_k_dense_replace=1, n_group=1, topk_group=1, attention_bias=attention_bias)


@pytest.mark.parametrize("q_lora_rank, attention_bias", [(32, False), (None, True)])
@pytest.mark.parametrize("mode", ["forward", "train", "decode"])
def test_multi_head_latent_attention_is_one_attention_row_with_its_low_rank_widths(q_lora_rank, attention_bias, mode):
    """DeepSeek-V2/V3 MLA: q (or q_a → norm → q_b), kv_a (latent + shared rotary key) → norm → kv_b, o_proj."""
    model, r = report("DeepseekV3ForCausalLM", deepseek(q_lora_rank, attention_bias), mode)
    rows = {row.path: row for row in r.rows}
    row = rows["model.layers.1.self_attn"]
    low = f"r_q={q_lora_rank} " if q_lora_rank else ""
    assert row.kind == "attention" and row.detail == f"d_model=64 h=4 h_kv=4 d_head=20 {low}r_kv=16 d_nope=12 d_rope=8 d_v=16"
    assert row.params == sum(p.numel() for p in model.model.layers[1].self_attn.parameters())
    h, d_qk, d_v, tokens = 4, 12 + 8, 16, (2 if mode == "decode" else 32)
    q = 64 * 32 + 32 * h * d_qk if q_lora_rank else 64 * h * d_qk
    per_token = 2 * (q + 64 * (16 + 8) + 16 * h * (12 + d_v) + h * d_v * 64)  # projections, kv_b once per token
    keys = r.settings.context + 1 if mode == "decode" else 16
    core = 2 * 2 * h * (1 if mode == "decode" else 16) * keys * (d_qk + d_v)  # QKᵀ and softmax·V, batch 2
    assert row.flops == (3 if mode == "train" else 1) * (tokens * per_token + core)
    assert r.agrees, [(x.path, x.expected_flops, x.flops) for x in r.rows if not x.agrees]


def test_audit_calls_multi_head_latent_attention_attention_and_phi3_gate_up_a_gated_feed_forward():
    from shapecheck.auditing import audit

    latent = audit(transformers.DeepseekV3Model(deepseek(32)))
    attention = latent.component("layers.0.self_attn")
    assert attention.kind == "attention" and "latent" in attention.style and latent.clean
    assert attention.values == {"d_model": 64, "h": 4, "r_q": 32, "r_kv": 16, "d_nope": 12, "d_rope": 8, "d_v": 16}
    assert not any(c.kind == "feed_forward" and "self_attn" in c.path for c in latent.components)
    phi3 = audit(transformers.Phi3Model(transformers.Phi3Config(**T, num_key_value_heads=2, pad_token_id=0)))
    mlp = phi3.component("layers.0.mlp")
    assert mlp.kind == "feed_forward" and mlp.values == {"d_model": 64, "d_ff": 96} and mlp.expected == 3 * 64 * 96
    assert phi3.clean


def test_multi_head_latent_attention_kv_cache_is_the_latent_transformers_caches():
    """MLA caches r_kv + d_rope values per token and layer, not 2·h·d_head: equal to a real DynamicCache on CPU."""
    config = deepseek(32)
    _, r = report("DeepseekV3ForCausalLM", config)
    model = transformers.DeepseekV3ForCausalLM(config).eval()
    with torch.no_grad():
        cache = model(torch.zeros(2, 16, dtype=torch.long), use_cache=True).past_key_values
    real = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert r.settings.dtype == "float32" and r.memory["kv_cache"] == real == 2 * 2 * 16 * (16 + 8) * 4


@pytest.mark.parametrize("d_v", [20, 16])
def test_cpu_kernel_choice_follows_torchs_dispatcher_when_values_are_narrower_than_queries(d_v):
    """torch runs SDPA on the math kernel on CPU when v's head width differs from q's (MLA: d_v != d_nope + d_rope)."""
    from torch.nn.attention import SDPBackend

    from shapecheck.counting import kernels

    q = k = torch.randn(2, 4, 16, 20)
    v = torch.randn(2, 4, 16, d_v)
    torch_picks = "math" if torch._fused_sdp_choice(q, k, v) == SDPBackend.MATH.value else "cpu_flash"
    assert kernels.choose("cpu", q.dtype, 0.0, False, 20, d_v) == torch_picks == ("cpu_flash" if d_v == 20 else "math")
