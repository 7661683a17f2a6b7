"""Small configs and a per-row checker shared by the report tests."""

from __future__ import annotations

import torch

from shapecheck.counting import formulas as f
from shapecheck.counting.dispatch import DispatchCount, count_flops
from shapecheck.counting.models import MODELS
from shapecheck.report import ReportConfig, attribute, resolve_config

SMALL = dict(d_model=16, heads=2, seq_len=5, batch=2)


def small(model: str, **overrides) -> ReportConfig:
    """A tiny config of ``model``: every size flag it accepts set small."""
    kind = MODELS[model]
    sizes = dict(SMALL)
    sizes.update({k: v for k, v in dict(layers=2, d_ff=24, vocab=50, max_seq=8).items() if k in kind.uses})
    sizes.update(overrides)
    return resolve_config(model, **sizes)


def expected_flops(config: ReportConfig, specs, seq: int | None = None) -> list[int]:
    """Each row's closed-form matmul FLOPs at the config's values."""
    values = {**config.sizes().values(), f.B: config.batch, f.S: seq or config.seq_len}
    return [int(spec.cost.flops.subs(values)) for spec in specs]


def count_real(config: ReportConfig, *, train: bool, grad: bool, device: str = "cpu") -> tuple[list[int], DispatchCount, list]:
    """Build the model for real on ``device``, run one forward pass in the given mode, attribute its FLOPs to rows."""
    kind = MODELS[config.model]
    sizes = config.sizes()
    with torch.device(device):
        module = kind.build(sizes)
    module.train(train)
    specs = kind.rows(sizes)
    inputs = kind.inputs(sizes, config.batch, config.seq_len, torch.device(device))
    with torch.set_grad_enabled(grad):
        count = count_flops(lambda: kind.run(module, inputs), module, kind.attention_paths(sizes))
    sums, unclaimed = attribute(specs, count)
    assert unclaimed == 0, f"{unclaimed} FLOPs in no row"
    return sums, count, specs
