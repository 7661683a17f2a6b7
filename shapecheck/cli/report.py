"""``shapecheck report``: per-layer parameters and FLOPs next to their closed forms.

Rendering only: the numbers come from ``shapecheck.report.build_report``.
Exit codes: 0 success; 1 a measured value disagrees with its formula, or
``--strict`` and some op did work without a formula; 2 bad input.
"""

from __future__ import annotations

from typing import Optional

import typer

from shapecheck.cli import options
from shapecheck.cli.common import EXIT_FINDINGS, usage_error
from shapecheck.counting.models import MODELS
from shapecheck.catalog import PRESETS
from shapecheck.errors import ShapecheckError

from shapecheck.counting.memory import DTYPES
from shapecheck.counting.per_token import PEAK_TFLOPS
from shapecheck.counting.tree import MODES
from shapecheck.render.builtin_report import render
from shapecheck.render.report_chart import chart, write_chart

FORMATS = ("table", "json", "markdown", "csv")
DTYPE_NAMES = tuple(DTYPES)
SIZE_FLAGS = ("d_model", "heads", "layers", "d_ff", "d_k", "d_v", "batch", "vocab", "max_seq")
MODEL_HELP = "; ".join(f"{name}: {kind.help}" for name, kind in MODELS.items())


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        target: Optional[str] = typer.Argument(None, metavar="TARGET", help="file.py:Name, package.module:Name, or transformers:ClassName with --config."),
        config_file: Optional[str] = options.text("--config", metavar="FILE", help="A transformers config.json (local; no hub access); the class from its 'architectures' unless TARGET names it."),
        mode: str = options.choice("--mode", choices=MODES, default="forward", help="forward, train (forward + backward), or decode (one token against a KV cache)."),
        context: int = options.positive("--context", default=2048, help="decode: tokens in the KV cache; also sizes the kv_cache memory."),
        dtype: Optional[str] = options.choice("--dtype", choices=DTYPE_NAMES, help="Element type for memory (default: the config's, else float32)."),
        depth: Optional[int] = options.positive("--depth", minimum=0, help="Rows down to this depth of the module tree (default: all)."),
        recompute: bool = options.flag("--recompute", help="train: activation recomputation (one more forward)."),
        causal_flops: str = options.choice("--causal-flops", choices=("full", "half"), default="full", help="Causal attention: the full S×S scores, or the half flash kernels compute."),
        tokens_per_second: Optional[int] = options.positive("--tokens-per-second", help="Measured training throughput, for MFU."),
        peak_tflops: Optional[int] = options.positive("--peak-tflops", help="The device's dense peak in TFLOPS, for MFU."),
        device_name: Optional[str] = options.choice("--device", choices=tuple(PEAK_TFLOPS), help="A device whose published dense peak gives MFU."),
        init: Optional[dict] = options.init(),
        heads: Optional[int] = options.heads("Attention heads h (default 8; a TARGET's or preset's own)."),
        d_model: Optional[int] = options.d_model("Model width (default 512; a TARGET's or preset's own)."),
        model: Optional[str] = options.choice("--model", choices=tuple(MODELS), help=f"A built-in model. {MODEL_HELP}."),
        layers: Optional[int] = options.positive("--layers", help="Layers per stack (default 6)."),
        d_ff: Optional[int] = options.positive("--d-ff", help="Feed-forward width (default 4·d_model)."),
        d_k: Optional[int] = options.positive("--d-k", help="Per-head query/key width (default d_model/h)."),
        d_v: Optional[int] = options.positive("--d-v", help="Per-head value width (default d_model/h)."),
        seq_len: Optional[str] = options.text("--seq-len", metavar="N|NAME", help="Sequence length (default 128), or (built-in models) a name such as S for polynomials in it."),
        batch: Optional[int] = options.positive("--batch", help="Batch size (default 1)."),
        vocab: Optional[int] = options.positive("--vocab", help="Vocabulary (models with embeddings or heads)."),
        max_seq: Optional[int] = options.positive("--max-seq", help="Learned position table size (bert, gpt)."),
        preset: Optional[str] = options.preset(tuple(PRESETS)),
        impl: Optional[str] = options.choice("--impl", choices=("sdpa", "math"), help="Attention path of mha/encoder/decoder: sdpa (default) or math; the counts are the same."),
        output_format: str = options.output_format(FORMATS),
        strict: bool = options.flag("--strict", help="Exit 1 when an op did work that no formula counts."),
        plot: bool = options.flag("--plot", help="Also chart FLOPs against sequence length, by part (terminal)."),
        plot_file: Optional[str] = options.text("--plot-file", metavar="FILE", help="Write that chart to a PNG/SVG file (needs matplotlib)."),
        all_layers: bool = options.flag("--all-layers", help="Table: show every layer, not layer 0 and a summary of identical ones."),
        fvcore: bool = options.flag("--fvcore", help="Add fvcore's count per row as a cross-check (fvcore reports MACs and calls them flops)."),
    ) -> None:
        """Per-layer parameters and FLOPs with their closed-form formulas, measured on the real module.

        Parameters come from the reference module built on the meta device (no weights allocated),
        FLOPs from dispatch-level counting of one forward pass; both sit next to the formula.
        """
        from shapecheck.report import build_report, numeric_length, resolve_config

        tree_preset = preset if preset in tree_presets() else None
        if target is not None or config_file is not None or tree_preset:
            peak = float(peak_tflops) if peak_tflops else PEAK_TFLOPS.get(device_name or "")
            settings = dict(mode=mode, context=context, dtype=dtype, depth=depth, recompute=recompute,
                            causal_flops=causal_flops, tokens_per_second=tokens_per_second, peak_tflops=peak,
                            batch=batch or 1, seq_len=numeric_length(seq_len))
            flags = dict(model=model, preset=None if tree_preset else preset, layers=layers, d_ff=d_ff, d_k=d_k, d_v=d_v, vocab=vocab,
                         max_seq=max_seq, impl=impl, plot=plot or None, plot_file=plot_file, fvcore=fvcore or None)
            _tree_report(target, config_file, output_format, settings, flags, init,
                         {"d_model": d_model, "heads": heads}, tree_preset, strict)
            return
        any_model = dict(mode=None if mode == "forward" else mode, dtype=dtype, depth=depth, recompute=recompute or None,
                         causal_flops=None if causal_flops == "full" else causal_flops, init=init,
                         tokens_per_second=tokens_per_second, peak_tflops=peak_tflops, device=device_name)
        given = [name for name, value in any_model.items() if value is not None]
        if given:
            usage_error(f"--{given[0].replace('_', '-')} applies to a TARGET, --config or the presets "
                        f"{', '.join(tree_presets())}, not to the built-in models (--model)")
        if plot and output_format in ("json", "csv"):
            usage_error(f"--plot draws a terminal chart, which would break --format {output_format} output; "
                        "use --format table or markdown with --plot, or --plot-file")
        sizes = dict(zip(SIZE_FLAGS, (d_model, heads, layers, d_ff, d_k, d_v, batch, vocab, max_seq)))
        config = resolve_config(model, preset, seq_len=seq_len, impl=impl, **sizes)
        if plot_file is not None:
            _require_matplotlib()
        result = build_report(config, fvcore=fvcore)
        code = EXIT_FINDINGS if not result.agrees or (strict and result.uncounted) else 0
        typer.echo(render(result, output_format, all_layers, code), nl=False)
        if plot:
            typer.echo(chart(config), nl=False)
        if plot_file:
            write_chart(config, plot_file)
            typer.echo(f"wrote the chart to {plot_file}", err=True)
        raise typer.Exit(code)


def tree_presets() -> tuple[str, ...]:
    """Presets of a kind the built-in models (``--model``) do not list rows for: counted from the module tree."""
    return tuple(name for name, preset in PRESETS.items() if preset.kind not in MODELS)


def _tree_report(target: Optional[str], config_file: Optional[str], output_format: str, settings: dict,
                 flags: dict, init: Optional[dict], sizes: dict, preset: Optional[str] = None, strict: bool = False) -> None:
    """``report TARGET`` / ``--config``: rows from the module tree (``shapecheck.counting.tree``)."""
    from shapecheck.counting.hf import config_dtype
    from shapecheck.counting.load import load_model
    from shapecheck.counting.tree import Settings, model_report
    from shapecheck.render.report import exit_code, render as render_tree

    given = [name for name, value in flags.items() if value is not None]
    if given:
        usage_error(f"--{given[0].replace('_', '-')} applies to the built-in models only, not to a TARGET, --config "
                    f"or the presets {', '.join(tree_presets())}")
    module, name = load_model(target, config_file, init=init, sizes=sizes, preset=preset)
    settings["dtype"] = settings["dtype"] or config_dtype(module) or "float32"
    result = model_report(module, name, Settings(**settings))
    typer.echo(render_tree(result, output_format, strict), nl=False)
    if exit_code(result, strict):
        raise typer.Exit(EXIT_FINDINGS)


def _require_matplotlib() -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        usage_error("--plot-file needs matplotlib, which is not installed; pip install matplotlib, or use --plot")


__all__ = ["register", "render", "chart", "ShapecheckError"]
