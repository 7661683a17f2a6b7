"""load_target / build: file and module targets, every failure a one-line UsageError."""

import os
import textwrap

import pytest
from torch import nn

from reference_models.attention import MultiHeadAttention
from shapecheck.errors import UsageError
from shapecheck.target import build, load_target, map_arguments

SEEDS = os.path.join(os.path.dirname(__file__), "..", "corpus", "seeds")


def _write(tmp_path, body: str, name: str = "user_attn.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_module_target_maps_width_heads_dropout():
    module, construction = build(load_target("reference_models.attention:MultiHeadAttention"), {"d_model": 6, "heads": 3, "dropout": 0.2})
    assert isinstance(module, MultiHeadAttention)
    assert (module.config.d_model, module.config.heads, module.config.dropout) == (6, 3, 0.2)
    assert construction.sources == {"d_model": "d_model", "heads": "heads", "dropout": "dropout"}
    assert "heads=3 (default 8) [heads]" in construction.describe()


def test_file_target_seed001_maps_h_and_d_model_and_writes_no_bytecode():
    path = os.path.join(SEEDS, "seed001_attention_constructible.py")
    before = set(os.listdir(SEEDS))
    module, construction = build(load_target(f"{path}:MultiHeadedAttention"), {"d_model": 8, "heads": 2})
    assert (module.h, module.d_k) == (2, 4)
    assert construction.arguments == {"h": 2, "d_model": 8}  # no dropout given: its default stays
    assert set(os.listdir(SEEDS)) == before  # no __pycache__ next to the user's file


def test_torch_multihead_attention_names():
    module, construction = build(load_target("torch.nn:MultiheadAttention"), {"d_model": 8, "heads": 4}, init={"batch_first": True})
    assert (module.embed_dim, module.num_heads, module.batch_first) == (8, 4, True)
    assert construction.sources["batch_first"] == "init"


def test_factory_function_gets_the_keywords_it_accepts(tmp_path):
    path = _write(tmp_path, """
        from torch import nn
        def make(n_embd, n_head):
            return nn.MultiheadAttention(n_embd, n_head)
    """)
    module, construction = build(load_target(f"{path}:make"), {"d_model": 6, "heads": 2, "dropout": 0.3})
    assert isinstance(module, nn.MultiheadAttention) and module.num_heads == 2
    assert construction.arguments == {"n_embd": 6, "n_head": 2}


def test_config_dataclass_union_is_built_from_the_sizes():
    module, construction = build(load_target("reference_models.bert:BertSelfAttention"), {"d_model": 8, "heads": 2})
    assert (module.config.d_model, module.config.heads) == (8, 2)
    assert construction.sources["config"].startswith("config: ")
    assert "d_model=8" in construction.sources["config"] and "heads=2" in construction.sources["config"]


def test_transformers_config_is_built_from_the_sizes():
    pytest.importorskip("transformers")
    module, _ = build(load_target("transformers.models.bert.modeling_bert:BertSelfAttention"), {"d_model": 8, "heads": 2, "dropout": 0.1})
    assert (module.num_attention_heads, module.attention_head_size, module.dropout.p) == (2, 4, 0.1)


def test_init_overrides_and_reaches_kwargs():
    construction = map_arguments(load_target("reference_models.attention:MultiHeadAttention"), {"d_model": 8, "heads": 2},
                                 keep_defaults=False, init={"heads": 4, "bias": False})
    assert construction.arguments["heads"] == 4 and construction.arguments["bias"] is False
    module, _ = build(load_target("reference_models.attention:MultiHeadAttention"), {"d_model": 8, "heads": 2}, init={"bias": False})
    assert module.q_proj.bias is None


@pytest.mark.parametrize("spec, message", [
    ("nowhere/missing.py:X", "no such file: nowhere/missing.py"),
    ("no_such_package_xyz:X", "cannot import module no_such_package_xyz: ModuleNotFoundError"),
    ("reference_models.attention:Nope", "has no name 'Nope' (nn.Module classes there: MultiHeadAttention, ScaledDotProductAttention)"),
    ("reference_models.attention:AttentionConfig", "is a class but not a torch.nn.Module"),
    ("reference_models.attention", "is not path/to/file.py:Name"),
    ("torch.nn:functional", "not an nn.Module class or factory function"),
])
def test_load_failures_are_one_line_usage_errors(spec, message):
    with pytest.raises(UsageError) as info:
        load_target(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_import_error_in_user_file(tmp_path):
    path = _write(tmp_path, "import torch\nraise RuntimeError('boom\\nsecond line')\n")
    with pytest.raises(UsageError, match=r"cannot import .*RuntimeError: boom$"):
        load_target(f"{path}:X")


def test_unmappable_required_argument_names_it_with_the_init_hint(tmp_path):
    path = _write(tmp_path, """
        from torch import nn
        class Odd(nn.Module):
            def __init__(self, d_model, heads, rank):
                super().__init__()
    """)
    target = load_target(f"{path}:Odd")
    with pytest.raises(UsageError, match=r"cannot map required argument 'rank' of Odd; give it with --init 'rank=...'$"):
        build(target, {"d_model": 4, "heads": 2})
    module, _ = build(target, {"d_model": 4, "heads": 2}, init={"rank": 3})
    assert isinstance(module, nn.Module)


def test_construction_raising_and_unknown_init(tmp_path):
    path = _write(tmp_path, """
        from torch import nn
        class Picky(nn.Module):
            def __init__(self, d_model, heads):
                super().__init__()
                if d_model % 3:
                    raise ValueError("d_model must be a multiple of 3")
    """)
    target = load_target(f"{path}:Picky")
    with pytest.raises(UsageError, match=r"fails to construct: Picky\(d_model=4 \[d_model\], heads=2 \[heads\]\) raised ValueError: d_model must"):
        build(target, {"d_model": 4, "heads": 2})
    with pytest.raises(UsageError, match="does not take"):
        build(target, {"d_model": 6, "heads": 2}, init={"colour": 1})


def test_factory_returning_a_tensor(tmp_path):
    path = _write(tmp_path, "import torch\ndef make(d_model, heads):\n    return torch.zeros(d_model)\n")
    with pytest.raises(UsageError, match="returned Tensor, not an nn.Module"):
        build(load_target(f"{path}:make"), {"d_model": 4, "heads": 2})
