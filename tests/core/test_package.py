"""The package surface: lazy top-level names, and lint running without importing torch."""

from __future__ import annotations

import subprocess
import sys

import torch.nn as nn

import shapecheck
from shapecheck.auditing import audit


def test_top_level_audit_is_the_auditing_function_and_audits_torch_mha_clean():
    assert shapecheck.audit is audit
    result = shapecheck.audit(nn.MultiheadAttention(8, 2))
    assert result.clean


def test_lint_command_runs_without_importing_torch(tmp_path):
    source = tmp_path / "attn.py"
    source.write_text("import torch\n\ndef f(q, k):\n    return (q @ k.transpose(-2, -1)).softmax(dim=-1)\n")
    code = (
        "import sys\n"
        "from shapecheck.cli import main\n"
        f"sys.argv = ['shapecheck', 'lint', '--extend-select', 'SC102', {str(source)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    last = out.stdout.strip().splitlines()[-1]
    assert "SC102" in out.stdout  # unscaled scores reach softmax: the command really ran
    assert last == "exit 1 False"
