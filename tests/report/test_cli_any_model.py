"""``shapecheck report TARGET`` and ``--config``: formats, 80 columns, one-line errors with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from torch.utils.flop_counter import FlopCounterMode

from shapecheck.cli import app
from shapecheck.counting import flop_counter_mapping

transformers = pytest.importorskip("transformers")
runner = CliRunner()
DECODER = "tests/report/test_any_model.py:GQADecoder"


def run(*args: str, width: int = 80):
    return runner.invoke(app, ["report", *args], env={"COLUMNS": str(width)})


@pytest.fixture(scope="module")
def llama_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("configs") / "config.json"
    transformers.LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=64, architectures=["LlamaForCausalLM"]).to_json_file(path)
    return str(path)


def test_a_users_file_target_reports_with_verdict_fields():
    result = run(DECODER, "--seq-len", "6", "--batch", "2", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["exit_code"] == 0
    assert set(data) >= {"config", "rows", "total", "memory", "uncounted", "notes"}
    assert set(data["total"]) >= {"params", "active_params", "flops", "macs", "per_token"}
    assert set(data["memory"]) == {"weights", "gradients", "optimizer", "activations", "kv_cache", "train_peak"}


def test_config_alone_and_with_a_class_give_the_same_report(llama_config):
    alone = json.loads(run("--config", llama_config, "--format", "json").stdout)
    named = json.loads(run("transformers:LlamaForCausalLM", "--config", llama_config, "--format", "json").stdout)
    assert alone["total"] == named["total"] and alone["total"]["params"] > 0


@pytest.mark.parametrize("mode", ["forward", "train", "decode"])
@pytest.mark.parametrize("width", [80, 200])
def test_the_table_fits_the_terminal(llama_config, mode, width):
    result = run("--config", llama_config, "--mode", mode, width=width)
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= width
    assert "model.layers.0.self_attn" in result.stdout


def test_markdown_and_csv_carry_rows_and_memory(llama_config):
    md = run("--config", llama_config, "--format", "markdown").stdout
    assert "| model.layers.0.mlp | gated_mlp |" in md
    csv_text = run("--config", llama_config, "--format", "csv").stdout
    assert "(memory) kv_cache" in csv_text and csv_text.splitlines()[0].startswith("module,kind,params")


def test_mfu_from_a_device_name(llama_config):
    data = json.loads(run("--config", llama_config, "--mode", "train", "--tokens-per-second", "1000",
                          "--device", "A100", "--format", "json").stdout)
    per_token = data["total"]["per_token"]
    assert per_token["mfu"] == pytest.approx(per_token["measured"] * 1000 / 312e12)


@pytest.mark.parametrize("mode", ["forward", "decode", "train"])
def test_mfu_uses_the_flops_of_the_mode_measured(llama_config, mode):
    # bfloat16: the flash kernels take Llama's grouped heads (in float32 torch runs math for them on CUDA)
    data = json.loads(run("--config", llama_config, "--mode", mode, "--tokens-per-second", "1000", "--device", "H100",
                          "--dtype", "bfloat16", "--format", "json").stdout)
    per_token = data["total"]["per_token"]
    u = per_token["utilisation"]
    assert u["mode"] == mode and u["flops_per_token"] == per_token["measured"] == data["total"]["flops_per_token"]
    assert u["peak_tflops"] == 989.0 and per_token["mfu"] == pytest.approx(u["flops_per_token"] * 1000 / 989e12)
    assert set(u["conventions"]) == {"mfu", "hfu"}
    if mode == "train":  # flash backward recomputes QKᵀ: one S×S product per layer more than the model FLOPs
        c = transformers.LlamaConfig.from_json_file(llama_config)
        d_head, seq = c.hidden_size // c.num_attention_heads, 128
        rescore = c.num_hidden_layers * 2 * c.num_attention_heads * seq * seq * d_head // seq
        assert data["kernel"]["name"] == "flash"  # --device H100 is cuda
        assert u["hardware_flops_per_token"] == u["flops_per_token"] + rescore
    else:
        assert u["hardware_flops_per_token"] == u["flops_per_token"]


def test_hfu_equals_mfu_when_the_kernel_keeps_the_scores(llama_config):
    data = json.loads(run("--config", llama_config, "--mode", "train", "--tokens-per-second", "1000",
                          "--peak-tflops", "100", "--attention-kernel", "math", "--format", "json").stdout)
    u = data["total"]["per_token"]["utilisation"]
    assert data["kernel"]["name"] == "math" and u["hfu"] == u["mfu"] > 0


def test_a_transformers_class_with_init_reports_as_its_config_does(llama_config):
    """``transformers:Class --init`` (as audit and prove take it) builds the same model as ``--config``."""
    fields = json.loads(open(llama_config).read())
    init = ",".join(f"{k}={fields[k]}" for k in ("hidden_size", "intermediate_size", "num_hidden_layers",
                                                  "num_attention_heads", "num_key_value_heads", "vocab_size"))
    named = run("transformers:LlamaForCausalLM", "--init", init, "--format", "json")
    assert named.exit_code == 0, named.output
    by_init, by_config = json.loads(named.stdout), json.loads(run("--config", llama_config, "--format", "json").stdout)
    assert by_init["total"]["params"] == by_config["total"]["params"]
    assert by_init["total"]["flops"] == by_config["total"]["flops"]
    assert [r["path"] for r in by_init["rows"]] == [r["path"] for r in by_config["rows"]]


LLAMA_TINY = str(Path(__file__).parent / "configs" / "llama-tiny.json")


def _bad_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    return str(path)


def _unknown_architecture(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"model_type": "llama", "architectures": ["NoSuchModelForCausalLM"]}))
    return str(path)


@pytest.mark.parametrize("make,extra,needle", [
    (lambda t: str(t / "missing.json"), [], "no such file"),
    (_bad_json, [], "not JSON"),
    (_unknown_architecture, [], "unknown architecture 'NoSuchModelForCausalLM'"),
    (None, ["transformers:NoSuchModel"], "NoSuchModel"),
    (lambda t: LLAMA_TINY, ["transformers:LlamaForCausalLM", "--init", "hidden_size=32"], "--init sets a TARGET's"),
    (None, [DECODER, "--d-ff", "8"], "--d-ff applies to the built-in models (--model/--preset), not to a TARGET"),
    (None, ["--preset", "llama-2-7b", "--model", "gpt"], "--preset llama-2-7b contradicts --model gpt"),
    (None, ["--preset", "llama-2-7b", "--init", "a=1"], "--init sets a TARGET's constructor arguments"),
    (None, [DECODER, "--mode", "sideways"], "--mode 'sideways' is not one of: forward, train, decode"),
    (None, [DECODER, "--context", "0"], "--context must be a positive integer, got 0"),
    (None, [DECODER, "--attention-kernel", "flash"], "--attention-kernel picks what a training step saves"),
    (None, [DECODER, "--mode", "train", "--attention-kernel", "fast"], "--attention-kernel 'fast' is not one of"),
    (None, [DECODER, "--device", "tpu"], "--device 'tpu' is not one of: cpu, cuda"),
    (None, ["nofile.py:Model"], "nofile.py"),
    (None, ["tests/report/test_cli_any_model.py:Failing"], "its forward pass fails on meta in --mode forward"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, make, extra, needle):
    args = (["--config", make(tmp_path)] if make else []) + extra
    result = run(*args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output


class Cumulative(torch.nn.Module):
    """A block with an op that does arithmetic and has no formula (cumsum over the sequence)."""

    def __init__(self, d_model: int = 8) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.proj(torch.logcumsumexp(x, dim=1))


def test_uncounted_ops_are_listed_and_strict_exits_1():
    target = "tests/report/test_cli_any_model.py:Cumulative"
    loose = run(target, "--format", "json")
    assert loose.exit_code == 0 and [e["op"] for e in json.loads(loose.stdout)["uncounted"]] == ["aten.logcumsumexp"]
    strict = run(target, "--strict", "--format", "json")
    assert strict.exit_code == 1 and json.loads(strict.stdout)["exit_code"] == 1


class Failing(torch.nn.Module):
    def __init__(self, d_model: int = 8) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(d_model, d_model)

    def forward(self, x):
        raise ValueError("a forward that fails\nover two lines")


def test_torch_multihead_attention_seq_first_packed_projection_is_one_recognised_block():
    result = run("torch.nn:MultiheadAttention", "--d-model", "16", "--heads", "2", "--batch", "2", "--seq-len", "3",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    module = torch.nn.MultiheadAttention(16, 2, device="meta")
    x = torch.zeros(3, 2, 16, device="meta")  # (seq, batch, d_model): batch_first=False, as the probe finds it behave
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter, torch.no_grad():
        module(x, x, x)
    assert data["total"]["flops"] == counter.get_total_flops()
    block = data["rows"][0]  # in_proj_weight packs q, k, v; batch_first=False reads (seq, batch, width)
    assert block["kind"] == "attention" and block["agrees"] is True
    assert block["expected_flops"] == block["flops"] == data["total"]["flops"]
    assert data["convention"]["layout"] == "seq-first" and data["convention"]["attention"] == "cross"


@pytest.mark.parametrize("mode, tokens", [("forward", 40), ("decode", 300)])
def test_kv_cache_holds_the_context_asked_about_and_says_so(llama_config, mode, tokens):
    data = json.loads(run("--config", llama_config, "--mode", mode, "--seq-len", "40", "--context", "300",
                          "--format", "json").stdout)
    c = transformers.LlamaConfig.from_json_file(llama_config)
    per_token = 2 * c.num_hidden_layers * c.num_key_value_heads * (c.hidden_size // c.num_attention_heads)
    assert data["memory"]["kv_cache"] == per_token * tokens * 4
    assert any(f"kv_cache holds {tokens} tokens" in note for note in data["notes"])


def test_the_dtype_default_is_said_with_its_source(llama_config, tmp_path):
    declared = tmp_path / "config.json"
    declared.write_text(json.dumps({**json.loads(open(llama_config).read()), "torch_dtype": "bfloat16"}))
    cases = [(["--config", str(declared)], "bfloat16", "the config's torch_dtype"),
             (["--config", llama_config], "float32", "the default: no dtype in the config"),
             (["--config", str(declared), "--dtype", "float16"], "float16", "--dtype")]
    for args, dtype, source in cases:
        data = json.loads(run(*args, "--format", "json").stdout)
        assert data["config"]["dtype"] == dtype and data["config"]["dtype_source"] == source
        assert any(f"dtype {dtype} ({source})" in note for note in data["notes"])


MARIAN = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
              encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=100, pad_token_id=0, decoder_start_token_id=0)


@pytest.mark.parametrize("mode", ["forward", "train"])
def test_marian_from_its_config_counts_as_its_module_form_does(tmp_path, mode):
    """Marian's SDPA mask preparation calls .item(), which meta cannot answer: --config counts it as the
    module form does, and says how."""
    path = tmp_path / "config.json"
    transformers.MarianConfig(**MARIAN, architectures=["MarianMTModel"]).to_json_file(path)
    by_config = run("--config", str(path), "--mode", mode, "--format", "json")
    assert by_config.exit_code == 0, by_config.output
    init = ",".join(f"{k}={v}" for k, v in MARIAN.items())
    by_init = json.loads(run("transformers:MarianMTModel", "--init", init, "--mode", mode, "--format", "json").stdout)
    data = json.loads(by_config.stdout)
    assert data["total"]["flops"] == by_init["total"]["flops"] and data["total"]["params"] == by_init["total"]["params"]
    assert any(".item()" in note for note in data["notes"])


def test_a_preset_and_its_published_config_default_to_the_same_dtype(tmp_path):
    """One rule: the config's torch_dtype, else float32; a preset carries its published config's."""
    from shapecheck.catalog.presets import PUBLISHED_DTYPES, QWEN2_0_5B

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN2_0_5B, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                                "torch_dtype": PUBLISHED_DTYPES["qwen2-0.5b"]}))
    by_config = json.loads(run("--config", str(path), "--seq-len", "16", "--format", "json").stdout)
    by_preset = json.loads(run("--preset", "qwen2-0.5b", "--seq-len", "16", "--format", "json").stdout)
    assert by_config["config"]["dtype"] == by_preset["config"]["dtype"] == "bfloat16"
    assert by_config["memory"]["weights"] == by_preset["memory"]["weights"]
    assert by_config["memory"]["kv_cache"] == by_preset["memory"]["kv_cache"]
