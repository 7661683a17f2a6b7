#!/usr/bin/env bash
# The checks that need a GPU, in one run: what a machine with CUDA is for.
#
#     bash benchmarks/gpu_checks.sh [LOG_DIR]     (default: gpu_checks_logs/)
#
# With shapecheck and the test extra installed on the GPU machine's own stack, it runs, writing one log each (install
# carried wheels into the machine's environment, not with `pip install --target` and PYTHONPATH: tests start
# subprocesses with a PYTHONPATH of their own, which then find neither pyflakes nor beartype):
# - the suite on that stack (pytest -n 12, in the background: the timings below run after it ends);
# - report's activations and training-step peak against the GPU (bench_report_memory.py --device cuda), and
#   which SDPA kernel torch runs for each kind of call;
# - the runtime checks' cost per call, eager and compiled (bench_checked.py --device cuda [--compile]).
# The README's GPU figures come from these logs; a run takes about 4 minutes on an H200.
set -u
LOGS=${1:-gpu_checks_logs}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" | tee "$LOGS/versions.txt"
(timeout 300 python3 -m pytest -n 12 -q -p no:cacheprovider -rfEs > "$LOGS/pytest.log" 2>&1; echo "pytest rc $?" >> "$LOGS/pytest.log") &
suite=$!
timeout 240 python3 benchmarks/bench_report_memory.py --device cuda 2>&1 | tee "$LOGS/memory.txt"
wait $suite
tail -30 "$LOGS/pytest.log"
timeout 100 python3 benchmarks/bench_checked.py --device cuda --repeats 400 2>&1 | tee "$LOGS/checked_eager.txt"
timeout 180 python3 benchmarks/bench_checked.py --device cuda --compile --repeats 300 2>&1 | tee "$LOGS/checked_compiled.txt"
