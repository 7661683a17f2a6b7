"""``report`` on any model: a decoder written here as a researcher would, rows from its module tree, peers' counts."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from shapecheck.counting import flop_counter_mapping
from shapecheck.counting.tree import Settings, model_report

D, H, H_KV, FF, VOCAB, LAYERS, B, S = 32, 4, 2, 48, 64, 2, 2, 6


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rotate(x):
    half = x.shape[-1] // 2
    angles = torch.arange(x.shape[-2], device=x.device)[:, None] * torch.arange(half, device=x.device)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    return torch.cat([x[..., :half] * cos - x[..., half:] * sin, x[..., :half] * sin + x[..., half:] * cos], -1)


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d_model // n_heads
        self.wq = nn.Linear(d_model, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d_model, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = rotate(self.wq(x).view(b, t, self.n_heads, self.head_dim).transpose(1, 2))
        k = rotate(self.wk(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2))
        v = self.wv(x).view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        groups = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.w1, self.w3 = nn.Linear(d_model, hidden, bias=False), nn.Linear(d_model, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention_norm, self.attention = RMSNorm(D), Attention(D, H, H_KV)
        self.ffn_norm, self.feed_forward = RMSNorm(D), SwiGLU(D, FF)

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class GQADecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm, self.output = RMSNorm(D), nn.Linear(D, VOCAB, bias=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.output(self.norm(x))


def closed_form_forward() -> int:
    """Written out: per layer q, o (d·d each), k, v (d·h_kv·d_head each), scores and values, three FFN matrices."""
    d_head = D // H
    attention = 2 * B * S * (2 * D * D + 2 * D * H_KV * d_head) + 2 * 2 * B * H * S * S * d_head
    ffn = 2 * B * S * 3 * D * FF
    return LAYERS * (attention + ffn) + 2 * B * S * D * VOCAB


def flop_counter(module, *args, train=False) -> int:
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter:
        out = module(*args)
        if train:
            out.sum().backward()
    return counter.get_total_flops()


@pytest.fixture(scope="module")
def decoder():
    with torch.device("meta"):
        return GQADecoder()


def test_the_users_decoder_params_flops_and_rows(decoder):
    report = model_report(decoder, "GQADecoder", Settings(batch=B, seq_len=S))
    tokens = torch.zeros(B, S, dtype=torch.long, device="meta")
    assert report.total["params"] == sum(p.numel() for p in decoder.parameters())
    assert report.total["flops"] == flop_counter(decoder, tokens) == closed_form_forward()
    kinds = {row.path: row.kind for row in report.rows}
    assert kinds["layers.0.attention"] == "attention" and kinds["layers.0.feed_forward"] == "gated_mlp"
    assert kinds["layers.0.attention_norm"] == kinds["norm"] == "norm" and kinds["output"] == "linear"
    attention = next(r for r in report.rows if r.path == "layers.0.attention")
    assert "h_kv=2" in attention.detail and attention.flops_formula and attention.agrees
    assert all(r.agrees for r in report.rows) and report.uncounted == []


def test_train_is_the_counted_backward_and_three_times_forward(decoder):
    forward = model_report(decoder, "d", Settings(batch=B, seq_len=S)).total["flops"]
    train = model_report(decoder, "d", Settings(batch=B, seq_len=S, mode="train"))
    tokens = torch.zeros(B, S, dtype=torch.long, device="meta")
    assert train.total["flops"] == flop_counter(decoder, tokens, train=True) == 3 * forward
    assert train.agrees


def test_flop_counter_mapping_makes_training_three_times_forward_on_cpu():
    torch.manual_seed(0)
    model = GQADecoder()
    tokens = torch.randint(0, VOCAB, (B, S))
    assert flop_counter(model, tokens, train=True) == 3 * flop_counter(model, tokens)
    with FlopCounterMode(display=False) as forward:  # torch's registry alone: no CPU SDPA formulas
        model(tokens)
    with FlopCounterMode(display=False) as train:
        model(tokens).sum().backward()
    assert forward.get_total_flops() < flop_counter(model, tokens)
    assert train.get_total_flops() < flop_counter(model, tokens, train=True)


def test_decode_equals_the_closed_form_and_kv_cache(decoder):
    context = 10
    report = model_report(decoder, "d", Settings(batch=B, mode="decode", context=context))
    d_head, keys = D // H, context + 1
    per_layer = 2 * B * (2 * D * D + 2 * D * H_KV * d_head) + 2 * 2 * B * H * keys * d_head + 2 * B * 3 * D * FF
    assert report.total["flops"] == LAYERS * per_layer + 2 * B * D * VOCAB
    assert report.memory["kv_cache"] == 2 * LAYERS * H_KV * d_head * context * B * 4


def test_memory_conventions():
    with torch.device("meta"):
        decoder = GQADecoder()
    report = model_report(decoder, "d", Settings(batch=B, seq_len=S, mode="train", dtype="bfloat16"))
    n = report.total["params"]
    assert report.memory["weights"] == report.memory["gradients"] == 2 * n
    assert report.memory["optimizer"] == 12 * n  # Adam moments + float32 master copy
    assert report.memory["activations"] > 0


def test_identical_layers_fold_into_one_row(decoder):
    report = model_report(decoder, "d", Settings(batch=B, seq_len=S))
    folded = [r for r in report.rows if r.kind == "repeat"]
    assert [r.path for r in folded] == ["layers.1"] and folded[0].count == 1
    layer0 = next(r for r in report.rows if r.path == "layers.0")
    assert folded[0].flops == layer0.flops and math.isclose(folded[0].params, layer0.params)


def test_recompute_runs_each_layer_again_and_saves_less(decoder):
    settings = dict(batch=B, seq_len=S, mode="train")
    plain = model_report(decoder, "d", Settings(**settings))
    again = model_report(decoder, "d", Settings(**settings, recompute=True))
    forward = model_report(decoder, "d", Settings(batch=B, seq_len=S))
    layers = sum(r.flops for r in forward.rows if r.path in ("layers.0", "layers.1"))
    last_matmul = LAYERS * 2 * B * S * FF * D  # w2: its output is not saved, so checkpoint stops before it
    assert again.total["flops"] == plain.total["flops"] + layers - last_matmul
    assert again.memory["activations"] < plain.memory["activations"]


def test_activation_bytes_on_meta_equal_those_saved_on_cpu():
    """The tensors autograd saves, measured on meta, equal the same measurement on small real CPU tensors."""
    from shapecheck.counting.inputs import runner
    from shapecheck.counting.measure import train

    with torch.device("meta"):
        on_meta = GQADecoder()
    torch.manual_seed(0)
    on_cpu = GQADecoder()
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):  # meta runs SDPA's math path
        cpu_bytes = train(on_cpu, runner(on_cpu, B, S, "cpu", grad=True)).activations
    assert train(on_meta, runner(on_meta, B, S, "meta", grad=True)).activations == cpu_bytes > 0


class MetaShy(nn.Module):
    """A block whose constructor reads a value, which the meta device cannot give: built on the CPU instead."""

    def __init__(self, d_model: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.scale = float(torch.ones(1).sum().item())

    def forward(self, x):
        return self.proj(x) * self.scale


class MetaShyAndHuge(MetaShy):
    def __init__(self, d_model: int = 16) -> None:
        super().__init__(d_model)
        self.table = nn.Embedding(2**20, 2**7)  # 2^27 elements: over the CPU fallback's budget


def test_a_target_that_fails_on_meta_is_built_on_the_cpu_only_when_small():
    from shapecheck.counting.load import load_model
    from shapecheck.errors import UsageError

    module, label = load_model("tests/report/test_any_model.py:MetaShy", None)
    assert "built on the CPU" in label and next(module.parameters()).device.type == "cpu"
    report = model_report(module, label, Settings(batch=2, seq_len=3))
    assert report.total["flops"] == 2 * 2 * 3 * 16 * 16
    with pytest.raises(UsageError, match="Tensor.item"):
        load_model("tests/report/test_any_model.py:MetaShyAndHuge", None)


def test_depth_folds_the_tree_and_causal_half_takes_half_the_scores(decoder):
    shallow = model_report(decoder, "d", Settings(batch=B, seq_len=S, depth=1))
    assert {r.path for r in shallow.rows} == {"(model)", "tok_embeddings", "layers", "norm", "output"}
    full = model_report(decoder, "d", Settings(batch=B, seq_len=S, causal_flops="half"))
    half_scores_per_token = LAYERS * 2 * H * S * (D // H)  # half of 4·h·S·d_head per token per layer
    per_token = full.per_token
    assert per_token["measured_causal_half"] == per_token["measured"] - half_scores_per_token


def test_per_token_estimates_state_their_conventions(decoder):
    from shapecheck.counting.per_token import chinchilla

    report = model_report(decoder, "d", Settings(batch=1, seq_len=S))
    estimates = report.per_token["estimates"]
    n = report.per_token["non_embedding_params"]
    assert n == report.total["params"] - VOCAB * D  # the token table; the untied head is a matmul
    assert estimates["2N/6N"]["forward"] == 2 * n and estimates["2N/6N"]["train"] == 6 * n
    assert estimates["kaplan"]["forward"] == 2 * n + 2 * LAYERS * S * D
    # Chinchilla's forward minus its own non-matmul and gated terms: the measured count plus the embedding matmul
    # and the softmax, minus the third FFN matrix (Hoffmann et al. 2022 counts a two-matrix MLP)
    per_token = chinchilla(LAYERS, S, D, H, D, FF, VOCAB) // S
    assert estimates["chinchilla"]["forward"] == per_token
    gqa_kv = 2 * LAYERS * 2 * D * (D - H_KV * D // H)  # Chinchilla assumes h_kv = h
    softmax = LAYERS * 3 * H * S
    assert per_token == report.per_token["measured"] + 2 * VOCAB * D + softmax + gqa_kv - LAYERS * 2 * D * FF
    assert all(entry["convention"] for entry in estimates.values())


class FunctionalHead(torch.nn.Module):
    """A block whose output Linear is never called as a module: forward uses its weight directly."""

    def __init__(self, d_model: int = 8) -> None:
        super().__init__()
        self.up = torch.nn.Linear(d_model, 4 * d_model)
        self.out = torch.nn.Linear(4 * d_model, 5)  # a classifier, not a feed-forward pair

    def forward(self, x):
        return torch.nn.functional.linear(torch.relu(self.up(x)), self.out.weight, self.out.bias)


def test_a_part_used_through_its_weights_is_not_compared_and_its_parent_holds_the_flops():
    from shapecheck.counting.tree import Settings, model_report

    with torch.device("meta"):
        module = FunctionalHead()
    report = model_report(module, "FunctionalHead", Settings(batch=2, seq_len=3))
    rows = {r.path: r for r in report.rows}
    assert rows["up"].expected_flops == rows["up"].flops == 2 * 2 * 3 * 8 * 32
    assert rows["out"].expected_flops is None and rows["out"].flops == 0
    assert rows["(model)"].flops == 2 * 2 * 3 * 8 * 32 + 2 * 2 * 3 * 32 * 5  # the functional matmul: at the parent
    assert any(n.startswith("not called as modules") and "out" in n for n in report.notes)
