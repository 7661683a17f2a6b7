"""``report --config``: a config.json is checked up front; a bad one is one line naming the field and the value, exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app, options
from shapecheck.cli.config_file import MAX_DEPTH, check_config_file
from shapecheck.errors import UsageError

LLAMA = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=64, intermediate_size=128,
             num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2, vocab_size=128,
             max_position_embeddings=64)


def _write(path, **fields):
    path.write_text(json.dumps({**LLAMA, **fields}))
    return path


@pytest.mark.parametrize("fields, said", [
    ({"architectures": "LlamaForCausalLM"}, 'architectures is "LlamaForCausalLM"; it must be a list of class names'),
    ({"architectures": [1]}, "architectures is [1]; it must be a list of class names"),
    ({"num_attention_heads": 0}, f"num_attention_heads is 0; it must be a positive integer up to {options.SIZE_LIMITS['heads']:,}"),
    ({"hidden_size": "64"}, 'hidden_size is "64"; it must be a positive integer'),
    ({"hidden_size": float("nan")}, "hidden_size is nan; a config value must be a finite number"),
    ({"rope_theta": float("inf")}, "rope_theta is inf; a config value must be a finite number"),
    ({"num_hidden_layers": 10**9}, f"num_hidden_layers is 1000000000; it must be a positive integer up to {options.SIZE_LIMITS['layers']:,}"),
    ({"num_key_value_heads": 3}, "num_attention_heads=4 is not a multiple of num_key_value_heads=3"),
    ({"text_config": {"hidden_size": -1}}, "text_config.hidden_size is -1"),
])
def test_a_bad_field_is_one_line_naming_it(tmp_path, fields, said):
    path = _write(tmp_path / "config.json", **fields)
    result = CliRunner().invoke(app, ["report", "--config", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip() == f"shapecheck: error: --config {path}: {result.stderr.split(': ', 3)[-1].strip()}"
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_deep_nesting_and_unreadable_files_are_one_line(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UsageError, match=f"nested more than {MAX_DEPTH} levels deep"):
        check_config_file(str(deep))
    with pytest.raises(UsageError, match="a directory; give a config.json file"):
        check_config_file(str(tmp_path))
    with pytest.raises(UsageError, match="missing.json: no such file"):
        check_config_file(str(tmp_path / "missing.json"))
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    with pytest.raises(UsageError, match="cannot read it"):
        check_config_file(str(tmp_path / "loop.json"))
    fifo = tmp_path / "fifo.json"
    __import__("os").mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):  # would block a reader forever
        check_config_file(str(fifo))


def test_brackets_inside_strings_are_not_nesting(tmp_path):
    path = _write(tmp_path / "config.json", note="[[[[{{{{" * 20)
    assert check_config_file(str(path))["note"].startswith("[[[[")


def _transformers_defaults() -> list[tuple[str, dict]]:
    """Every tenth of transformers' config classes (by name), as the JSON its defaults save to."""
    transformers = pytest.importorskip("transformers")
    try:
        transformers.LlamaConfig  # noqa: B018 - transformers imports lazily; a broken install fails here
    except Exception as error:  # noqa: BLE001
        pytest.skip(f"transformers cannot import its configs here: {type(error).__name__}")
    names = sorted(n for n in dir(transformers) if n.endswith("Config"))[::10]
    found = []
    for name in names:
        try:
            cls = getattr(transformers, name)
            if isinstance(cls, type) and issubclass(cls, transformers.PretrainedConfig) and cls is not transformers.PretrainedConfig:
                found.append((name, json.loads(cls().to_json_string())))
        except Exception:  # noqa: BLE001 - a config class that needs arguments or extras: not a default to compare
            continue
    return found


def test_transformers_own_default_configs_pass(tmp_path):
    """No false alarm on real configs: the defaults transformers itself writes are all accepted."""
    defaults = _transformers_defaults()
    assert len(defaults) > 30
    for name, data in defaults:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        check_config_file(str(path))


def test_a_trillion_parameter_config_is_counted_on_meta(tmp_path):
    _transformers_defaults()  # skips where transformers cannot import its models
    path = _write(tmp_path / "config.json", hidden_size=32768, intermediate_size=131072, num_attention_heads=256,
                  num_key_value_heads=8, num_hidden_layers=80, vocab_size=131072)
    result = CliRunner().invoke(app, ["report", "--config", str(path), "--format", "json", "--seq-len", "16"])
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    d_model, d_ff, layers, vocab, kv_width = 32768, 131072, 80, 131072, 8 * (32768 // 256)
    per_layer = 2 * d_model * d_model + 2 * d_model * kv_width + 3 * d_model * d_ff + 2 * d_model  # q,o; k,v; MLP; norms
    assert data["total"]["params"] == 2 * vocab * d_model + layers * per_layer + d_model  # 1.2 trillion
