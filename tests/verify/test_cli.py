"""``shapecheck verify``: exit codes, JSON, the table, and one-line usage errors."""

import json
import os
import signal

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.testing.properties import PROPERTIES

from .conftest import EXAMPLES, HERE, MUTANTS, mutant

RUN = CliRunner()
FAST = ["--max-examples", str(min(EXAMPLES, 5)), "--max-seq-len", "3"]


def _json(*args):
    result = RUN.invoke(app, ["verify", *args, "--format", "json", *FAST])
    return result, json.loads(result.stdout) if result.stdout.strip().startswith("{") else None


def test_correct_module_exits_0_with_every_property_in_json():
    result, data = _json("reference_models.attention:MultiHeadAttention")
    assert result.exit_code == 0, result.output
    assert data["target"] == "reference_models.attention:MultiHeadAttention" and data["passed"] is True
    assert [p["name"] for p in data["properties"]] == [p.name for p in PROPERTIES]
    assert set(data["properties"][0]) >= {"name", "status", "counterexample", "message"}


def test_bug_exits_1_with_the_counterexample():
    result, data = _json(mutant("dropout_in_eval"), "--fail-fast")
    assert result.exit_code == 1 and data["passed"] is False
    failed = [p for p in data["properties"] if p["status"] == "failed"]
    assert failed[0]["name"] == "deterministic_eval"
    assert {"heads", "d_head", "batch", "seq_q", "seq_k", "mask", "dtype"} <= set(failed[0]["counterexample"])


def test_warning_exits_0_and_strict_exits_1():
    args = (mutant("neg_inf_plain_softmax"), "--property", "fully_masked_rows")
    result, data = _json(*args)
    assert result.exit_code == 0 and data["properties"][0]["status"] == "warning"
    result, data = _json(*args, "--strict")
    assert result.exit_code == 1 and data["properties"][0]["status"] == "failed"


def test_seed_makes_json_repeatable():
    args = (mutant("scale_d_model"), "--property", "reference", "--seed", "7")
    assert _json(*args)[1] == _json(*args)[1]


def test_table_shows_mapping_statuses_and_hint():
    result = RUN.invoke(app, ["verify", mutant("merge_without_transpose"), "--fail-fast", *FAST])
    assert result.exit_code == 1
    assert "Attention(d_model=" in result.stdout and "[heads]" in result.stdout
    assert "failed" in result.stdout and "minimal:" in result.stdout and "hint:" in result.stdout


def test_layout_option_reaches_the_module():
    spec = "tests/corpus/seeds/seed002_multihead.py:MultiheadAttention"
    result, data = _json(spec, "--layout", "seq-first", "--property", "batch_independence")
    assert result.exit_code == 1 and "layout: seq-first" in data["notes"]


def test_mask_option_overrides_the_convention():
    # key_padding_mask is True = pad; told it is True = keep, the masks invert and padding fails
    result, data = _json("reference_models.attention:MultiHeadAttention", "--mask", "keep", "--property", "padding")
    assert result.exit_code == 1 and any("True/1 = may attend" in n for n in data["notes"])
    result, data = _json("reference_models.attention:MultiHeadAttention", "--mask", "none", "--property", "padding")
    assert result.exit_code == 2 and data["properties"][0]["status"] == "skipped"  # nothing was checked: never exit 0


def test_every_selected_property_skipped_exits_2_with_the_reason():
    result, data = _json("reference_models.attention:MultiHeadAttention", "--property", "sliding_window")
    assert result.exit_code == 2 and data["ok"] is False and data["checked"] is False
    assert data["coverage"]["ran"] == [] and "sliding_window" in data["coverage"]["not_run"]
    assert data["properties"][0]["reason"].startswith("no sliding window")
    assert "nothing was checked" in result.stderr and "sliding_window: no sliding window" in result.stderr
    table = RUN.invoke(app, ["verify", "reference_models.attention:MultiHeadAttention", "--property", "sliding_window", *FAST])
    assert table.exit_code == 2 and "nothing was checked" in table.stdout


def test_json_carries_status_reason_and_coverage_and_the_verdict_names_a_skipped_reference():
    spec = os.path.join(HERE, "degenerate", "weightless.py") + ":Attention"  # no projections: no reference
    result, data = _json(spec)
    assert result.exit_code == 0, result.output
    by_name = {p["name"]: p for p in data["properties"]}
    assert by_name["reference"]["status"] == "skipped" and "no projection weights" in by_name["reference"]["reason"]
    assert by_name["output_shape"]["reason"] == "" and "output_shape" in data["coverage"]["ran"]
    assert "reference" in data["coverage"]["not_run"] and data["coverage"]["skipped"]["gradients"].startswith("the module has no trainable")
    table = RUN.invoke(app, ["verify", spec, *FAST])
    assert "reference skipped: no projection weights found" in table.stdout


@pytest.mark.parametrize("args, message", [
    (["nowhere.py:X"], "no such file: nowhere.py"),
    (["reference_models.attention:Nope"], "has no name 'Nope'"),
    (["reference_models.attention:MultiHeadAttention", "--layout", "sideways"], "--layout 'sideways' is not one of: batch-first, seq-first"),
    (["reference_models.attention:MultiHeadAttention", "--mask", "maybe"], "is not one of: auto, keep, ignore, additive, keep_float, none"),
    (["reference_models.attention:MultiHeadAttention", "--format", "xml"], "--format 'xml' is not one of: table, json"),
    (["reference_models.attention:MultiHeadAttention", "--init", "oops"], "--init item 'oops' is not name=value"),
    (["reference_models.attention:MultiHeadAttention", "--property", "speed"], "--property 'speed' is not one of"),
    (["torch.nn:Bilinear"], "cannot map required arguments 'in1_features', 'in2_features', 'out_features'"),
])
def test_usage_errors_exit_2_with_one_line(args, message):
    result = RUN.invoke(app, ["verify", *args])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_json_carries_the_shared_verdict_fields():
    result, data = _json(mutant("dropout_in_eval"), "--fail-fast")
    assert (data["ok"], data["exit_code"], result.exit_code) == (False, 1, 1)
    result, data = _json("reference_models.attention:MultiHeadAttention", "--property", "output_shape")
    assert (data["ok"], data["exit_code"], result.exit_code) == (True, 0, 0)


def test_a_module_that_cannot_run_is_one_line_exit_2(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import torch\nfrom torch import nn\n\nclass Broken(nn.Module):\n"
                    "    def __init__(self, d_model, heads):\n        super().__init__()\n        self.proj = nn.Linear(d_model, d_model)\n"
                    "    def forward(self, x):\n        return self.proj(torch.cat([x, x], dim=-1))\n")
    result = RUN.invoke(app, ["verify", f"{path}:Broken", *FAST])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert "could not run: Broken(x=float32 (3, 4, 2)) raised RuntimeError: mat1 and mat2" in line


def test_ctrl_c_reports_what_finished_and_exits_130(monkeypatch, ctrl_c):
    import shapecheck.cli.verify as cli

    real = cli.verify

    def interrupted(target, options, progress=None):
        def stop(name, done, total):
            if name == "permutation":
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as the terminal sends it
        return real(target, options, progress=stop)

    monkeypatch.setattr(cli, "verify", interrupted)
    result, data = _json("reference_models.attention:MultiHeadAttention")
    assert result.exit_code == 130 and data["interrupted"] is True and data["exit_code"] == 130
    assert [p["name"] for p in data["properties"]] == ["output_shape", "deterministic_eval", "batch_independence"]


def test_progress_counts_examples():
    from shapecheck.target import load_target
    from shapecheck.testing import VerifyOptions, verify

    seen = []
    verify(load_target("reference_models.attention:MultiHeadAttention"),
           VerifyOptions(max_examples=4, properties=("output_shape", "permutation")), progress=lambda *a: seen.append(a))
    assert seen[0] == ("output_shape", 1, 8) and seen[-1][1:] == (8, 8)
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)  # monotone


def test_a_property_of_the_other_suite_is_a_usage_error_not_a_pass():
    result = RUN.invoke(app, ["verify", "reference_models.attention:MultiHeadAttention", "--property", "padding_left"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "is an attention module: none of padding_left applies" in line


def _snapshot(root):
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_a_run_leaves_the_working_directory_as_it_was_and_the_seed_repeats_it(tmp_path):
    """No .hypothesis/ (example database or constants cache), no __pycache__, the user's file untouched."""
    import os
    import shutil
    import subprocess
    import sys

    shutil.copy(os.path.join(MUTANTS, "scale_d_model.py"), tmp_path / "attn.py")
    shutil.copy(os.path.join(MUTANTS, "_base.py"), tmp_path / "_base.py")
    before = _snapshot(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    command = [sys.executable, "-m", "shapecheck", "verify", "attn.py:Attention", "--property", "reference", "--seed", "3",
               "--format", "json", *FAST]
    runs = [subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert [r.returncode for r in runs] == [1, 1], runs[0].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)  # --seed: the same counterexample
    assert _snapshot(tmp_path) == before
