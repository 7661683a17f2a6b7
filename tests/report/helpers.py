"""Small configs of the built-in models, their reports, and closed forms per recognised part."""

from __future__ import annotations

import torch

from shapecheck.counting import closed_forms as cf
from shapecheck.counting.anatomy import parts as recognised
from shapecheck.counting.dispatch import DispatchCount, count_flops
from shapecheck.counting.feed import kind_feed
from shapecheck.counting.measure import subtree
from shapecheck.counting.tree import ModelReport, Settings, input_shapes
from shapecheck.report import ReportConfig, build, resolve_config

SMALL = dict(d_model=16, heads=2, seq_len=5, batch=2)


def small(model: str, **overrides) -> ReportConfig:
    """A tiny config of ``model``: every size flag it accepts set small."""
    from shapecheck.catalog import KINDS

    sizes = dict(SMALL)
    sizes.update({k: v for k, v in dict(layers=2, d_ff=24, vocab=50, max_seq=8).items() if k in KINDS[model].uses})
    sizes.update(overrides)
    return resolve_config(model, **sizes)


def report(config: ReportConfig, fvcore: bool = False, **settings) -> ModelReport:
    """``shapecheck report`` of a built-in config, as data."""
    from shapecheck.counting.symbolic import report_at

    module, name, feed = build(config)
    return report_at(module, name, Settings(batch=config.batch, **settings), config.seq_len, feed, fvcore)


def expected(part, shape: tuple[int, ...]) -> int:
    """A part's closed-form matmul FLOPs at the (batch..., seq, width) shape it was called with."""
    batch, seq = 1, shape[-2]
    for n in shape[:-2]:
        batch *= n
    return cf.evaluate(cf.form(part).flops, cf.values(part, batch, seq, seq))


def count_real(config: ReportConfig, *, train: bool, grad: bool, device: str = "cpu") -> tuple[dict, dict, DispatchCount]:
    """Build the model for real on ``device``, run one forward in the given mode: per recognised part called,
    (measured FLOPs of its subtree, its closed form), and the count."""
    kind = config.kind
    with torch.device(device):
        module = kind.build(config.sizes)
    module.train(train)
    parts = recognised(module)
    run = kind_feed(kind, config.sizes).runner(module, config.batch, config.seq_len, device)
    attention = [p for p, part in parts.items() if part.kind == "attention"]
    with torch.set_grad_enabled(grad), input_shapes(module, parts) as shapes:
        count = count_flops(run, module, attention)
    own: dict[str, int] = {}
    for record in count.records:
        own[record.module] = own.get(record.module, 0) + record.flops
    rows = {p: (subtree(own, p), expected(parts[p], shapes[p])) for p in parts if shapes.get(p)}
    return rows, own, count
