"""The hostile-input corpus: what a new user or an attacker gives shapecheck, and what must come back.

Each case is ``(name, arguments, expected, needle)``, run as ``python -m shapecheck ARGUMENTS`` in a temporary
directory holding ``modules/`` (the misbehaving fixture modules) and ``configs/`` (written by ``write_configs``):

- ``refused``: exit 2, stdout empty, one line ``shapecheck: error: ...`` last on stderr, holding ``needle``
  (the reason: a refusal for another reason, such as an unknown option, is not the case handled);
- ``json``: exit 0 or 1 and stdout one valid JSON document whose ``exit_code`` is the exit status;
- ``ran``: exit 0 or 1.

Arguments that begin with ``@DIR`` run from that sub-directory of the temporary directory.

Every case also requires no traceback, the working directory unchanged and nothing left in TMPDIR.
``benchmarks/bench_reliability.py`` runs them all and prints N/M handled.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

USER_CODE = ("report", "verify", "audit", "prove")
FAST = {"report": ["--seq-len", "4"], "verify": ["--max-examples", "3"], "audit": [], "prove": ["--samples", "1"]}
BIG = str(10**18)

EXITS = {"SysExitInForward": "exited", "SysExitInInit": "exited", "OsExitInForward": "os._exit(0)",
         "OsExitInInit": "os._exit(0)", "RaisesKeyboardInterrupt": "KeyboardInterrupt"}
CASES: list[tuple[str, list[str], str, str]] = []
for command in USER_CODE:
    for fixture, said in EXITS.items():
        CASES.append((f"{command} {fixture}", [command, f"exits.py:{fixture}", *FAST[command]], "refused", said))
    CASES.append((f"{command} os._exit at import", [command, "os_exit_at_import.py:Attention", *FAST[command]], "refused",
                  "os._exit(3)"))
    CASES.append((f"{command} prints (json)", [command, "prints.py:Prints", *FAST[command], "--format", "json"], "json", ""))
    CASES.append((f"{command} forks at import (json)", [command, "forks.py:Forks", *FAST[command], "--format", "json"], "json", ""))
for command in ("verify", "audit", "prove"):
    for fixture in ("HangsInForward", "HangsInInit"):
        CASES.append((f"{command} {fixture} --timeout", [command, f"hangs.py:{fixture}", "--timeout", "2"], "refused",
                      "did not return in 2 s"))
CASES.append(("prove forward returns None", ["prove", "exits.py:ReturnsNone"], "refused", "returns no tensor"))
CASES.append(("lint . among stdlib-named files", ["@stdlib_names", "lint", "."], "ran", ""))

CONFIGS: dict[str, str] = {
    "architectures-a-string": '"architectures": "LlamaForCausalLM"',
    "architectures-numbers": '"architectures": [1, 2]',
    "heads-zero": '"num_attention_heads": 0',
    "hidden-size-string": '"hidden_size": "64"',
    "hidden-size-nan": '"hidden_size": NaN',
    "layers-1e9": '"num_hidden_layers": 1000000000',
    "vocab-negative": '"vocab_size": -5',
    "kv-heads-do-not-divide": '"num_key_value_heads": 3',
    "hidden-size-float": '"hidden_size": 64.5',
    "rope-theta-infinity": '"rope_theta": Infinity',
}
for name in (*CONFIGS, "deep-array", "deep-object", "not-an-object", "empty", "binary", "directory", "missing", "fifo"):
    CASES.append((f"config {name}", ["report", "--config", f"configs/{name}.json"], "refused", f"--config configs/{name}.json: "))

SIZES: list[list[str]] = [
    ["report", "--layers", BIG], ["report", "--d-model", BIG], ["report", "--heads", BIG], ["report", "--batch", BIG],
    ["report", "--context", BIG], ["report", "--vocab", BIG, "--model", "gpt"], ["report", "--seq-len", BIG],
    ["report", "--seq-len", "nan"], ["report", "--seq-len", "inf"], ["report", "--seq-len", "-inf"],
    ["report", "--seq-len", "1e30"], ["report", "--depth", BIG], ["report", "--peak-tflops", BIG],
    ["verify", "exits.py:Attention", "--max-seq-len", BIG], ["verify", "exits.py:Attention", "--max-examples", BIG],
    ["verify", "exits.py:Attention", "--scale", "nan"], ["verify", "exits.py:Attention", "--timeout", "nan"],
    ["prove", "exits.py:Attention", "--samples", BIG], ["prove", "exits.py:Attention", "--max-size", f"seq={BIG}"],
    ["prove", "exits.py:Attention", "--size", f"d_in={BIG}"], ["prove", "exits.py:Attention", "--seed", "9" * 50],
    ["prove", "exits.py:Attention", "--timeout", "inf"], ["audit", "exits.py:Attention", "--d-model", BIG],
    ["audit", "exits.py:Attention", "--probe-d-model", BIG], ["audit", "exits.py:Attention", "--timeout", "-1"],
    ["lint", ".", "--jobs", BIG],
]
for arguments in SIZES:
    CASES.append((" ".join(arguments[:1] + arguments[-2:]), arguments, "refused", "must be"))

_LLAMA = ('{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, '
          '"num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 128, %s}')


def write_configs(directory: Path) -> None:
    """The hostile config files the ``config ...`` cases name, and the stdlib-named files of the lint case."""
    configs = directory / "configs"
    configs.mkdir()
    for name, field in CONFIGS.items():
        (configs / f"{name}.json").write_text(_LLAMA % field)
    (configs / "deep-array.json").write_text("[" * 100_000 + "]" * 100_000)
    (configs / "deep-object.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    (configs / "not-an-object.json").write_text(json.dumps([1, 2, 3]))
    (configs / "empty.json").write_text("")
    (configs / "binary.json").write_bytes(bytes(range(256)) * 8)
    (configs / "directory.json").mkdir()
    os.mkfifo(configs / "fifo.json")
    names = directory / "stdlib_names"
    names.mkdir()
    for module in ("ast", "tokenize", "typing", "inspect", "re", "enum"):
        (names / f"{module}.py").write_text(f"open({str(directory.parent / ('ran_' + module))!r}, 'w').write('ran')\n")
