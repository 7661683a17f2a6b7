"""transformers classes built from tiny configs on meta: params, FLOPs against FlopCounterMode, train, decode, MoE."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from shapecheck.counting import flop_counter_mapping
from shapecheck.counting.inputs import make_inputs, training_loss
from shapecheck.counting.tree import Settings, model_report

transformers = pytest.importorskip("transformers")

B, S = 2, 6
TINY = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, vocab_size=64)
CONFIGS = {
    "bert": lambda: transformers.BertConfig(**TINY, max_position_embeddings=16),
    "gpt2": lambda: transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=64, n_positions=16),
    "llama": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2),
    "mistral": lambda: transformers.MistralConfig(**TINY, num_key_value_heads=2, sliding_window=4),
    "mixtral": lambda: transformers.MixtralConfig(**TINY, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "t5": lambda: transformers.T5Config(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4, vocab_size=64),
    "vit": lambda: transformers.ViTConfig(**TINY, image_size=16, patch_size=4),
}
CLASSES = {"bert": "BertModel", "gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
           "mixtral": "MixtralForCausalLM", "t5": "T5ForConditionalGeneration", "vit": "ViTModel"}
DENSE = [name for name in CONFIGS if name != "mixtral"]


def build(name: str):
    with torch.device("meta"):
        return getattr(transformers, CLASSES[name])(CONFIGS[name]())


def unique_params(model) -> int:
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def flop_counter(model, train: bool = False) -> int:
    args, kwargs = make_inputs(model, B, S, "meta", grad=train)
    model.train(train)
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter:
        out = model(*args, **kwargs)
        if train:
            training_loss(out).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_params_equal_the_class_and_flops_equal_flop_counter_mode(name):
    model = build(name)
    report = model_report(model, name, Settings(batch=B, seq_len=S))
    assert report.total["params"] == unique_params(model)  # tied weights once
    if name != "mixtral":  # routing on meta: see the MoE test
        assert report.total["flops"] == flop_counter(model)
    assert report.agrees, [r for r in report.rows if not r.agrees]


def _rotary_table_flops(model, report) -> int:
    """FLOPs of the rotary cos/sin table (transformers' ``*RotaryEmbedding``): a matmul of the inverse
    frequencies with the positions in transformers 5.17, elementwise (0 matmul FLOPs) in later releases."""
    rotary = {path for path, m in model.named_modules() if type(m).__name__.endswith("RotaryEmbedding")}
    return sum(row.flops for row in report.rows if row.path in rotary)


@pytest.mark.parametrize("name", ["llama", "gpt2", "bert"])
def test_train_equals_the_counted_backward_three_times_forward(name):
    model = build(name)
    forward = model_report(model, name, Settings(batch=B, seq_len=S))
    train = model_report(model, name, Settings(batch=B, seq_len=S, mode="train"))
    assert train.total["flops"] == flop_counter(model, train=True)
    if name == "llama":  # no position or token-type gathers before the first matmul: exactly 3 ×, less the rotary
        table = _rotary_table_flops(model, forward)  # table, which has no backward (a matmul in transformers 5.17)
        assert train.total["flops"] - table == 3 * (forward.total["flops"] - table)


@pytest.mark.parametrize("name", ["llama", "gpt2", "bert", "t5"])
def test_train_rows_of_every_layer_agree_with_their_formulas(name):
    """Each backward op belongs to the module whose forward made its autograd node: layer 1's attention holds
    its own backward, not layer 0's too (FlopCounterMode's tracker gave it both), and every part is trained."""
    model = build(name)
    report = model_report(model, name, Settings(batch=B, seq_len=S, mode="train", fold=False))
    assert report.agrees, [(r.path, r.expected_flops, r.flops) for r in report.rows if not r.agrees]
    layers = [r for r in report.rows if r.kind == "attention"]
    assert len(layers) >= 2 and all(r.expected_flops is not None for r in layers)


def test_recognised_rows_cover_gqa_and_gated_mlp():
    report = model_report(build("llama"), "llama", Settings(batch=B, seq_len=S))
    kinds = {r.path: (r.kind, r.detail) for r in report.rows}
    assert kinds["model.layers.0.self_attn"] == ("attention", "d_model=32 h=4 h_kv=2 d_head=8 d_out=32")
    assert kinds["model.layers.0.mlp"][0] == "gated_mlp" and kinds["model.norm"][0] == "norm"


def test_mistral_decode_attends_to_the_window_only():
    model = build("mistral")
    report = model_report(model, "mistral", Settings(batch=1, mode="decode", context=20))
    c = CONFIGS["mistral"]()
    d, d_head, h, h_kv, ff = c.hidden_size, c.hidden_size // c.num_attention_heads, 4, 2, c.intermediate_size
    per_layer = 2 * (2 * d * d + 2 * d * h_kv * d_head) + 2 * 2 * h * c.sliding_window * d_head + 2 * 3 * d * ff
    table = _rotary_table_flops(model, report)  # the one new position's cos/sin: 2·d_head/2 FLOPs in 5.17
    assert table in (0, d_head)
    assert report.total["flops"] - table == c.num_hidden_layers * per_layer + 2 * d * c.vocab_size
    assert report.memory["kv_cache"] == 2 * c.num_hidden_layers * h_kv * d_head * 20 * 4


def test_mixtral_active_flops_follow_top_k_routing():
    c = CONFIGS["mixtral"]()
    report = model_report(build("mixtral"), "mixtral", Settings(batch=B, seq_len=S))
    d, ff, e, k, tokens = c.hidden_size, c.intermediate_size, c.num_local_experts, c.num_experts_per_tok, B * S
    moe = [r for r in report.rows if r.kind == "moe"][0]
    assert moe.flops == tokens * (k * 2 * 3 * d * ff + 2 * d * e)
    expert = 3 * d * ff
    assert report.total["params"] - report.total["active_params"] == c.num_hidden_layers * (e - k) * expert


@pytest.mark.parametrize("name", ["llama", "mistral"])
def test_decode_equals_transformers_own_kv_cache_step(name):
    """One token through the class's own KV cache (filled by a forward of ``context`` tokens), counted on meta."""
    model, context = build(name), 10
    filled = model(torch.zeros(B, context, dtype=torch.long, device="meta"), use_cache=True)
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter:
        model(torch.zeros(B, 1, dtype=torch.long, device="meta"), past_key_values=filled.past_key_values, use_cache=True)
    report = model_report(model, name, Settings(batch=B, mode="decode", context=context))
    assert report.total["flops"] == counter.get_total_flops()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rows_say_what_audits_recogniser_says(name):
    """One recogniser: every attention, feed-forward and norm row is a match of ``shapecheck.auditing.recognize``."""
    from shapecheck.auditing.recognize import recognize

    model = build(name)
    rows = {r.path: r for r in model_report(model, name, Settings(batch=B, seq_len=S)).rows}
    matches = {m.path: m for m in recognize(model)}
    for path, row in rows.items():
        if row.kind == "attention":
            info = matches[path].info if path in matches else next(
                m.info for p, m in matches.items() if m.kind == "attention" and path.startswith(p + "."))
            assert f"h={info['h']} h_kv={info['h_kv']} d_head={info['d_head']}" in row.detail, path
        elif row.kind in ("mlp", "gated_mlp"):
            assert matches[path].kind == "feed_forward" and matches[path].info["gated"] == (row.kind == "gated_mlp")
        elif row.kind == "norm":
            assert matches[path].kind == "norm"
