"""``shapecheck report``: per-module parameters and FLOPs next to their closed forms.

Parsing only: the model comes from ``counting.load`` (a TARGET or a config) or ``shapecheck.report``
(a built-in kind or preset), the numbers from ``counting.tree.model_report``, the text from ``render``.
Exit codes: 0 success; 1 a measured value disagrees with its formula, or
``--strict`` and some op did work without a formula; 2 bad input.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import typer

from shapecheck.catalog import KINDS, PRESETS
from shapecheck.cli import options
from shapecheck.cli.common import EXIT_FINDINGS, usage_error
from shapecheck.counting.kernels import DEVICES, KERNELS
from shapecheck.counting.memory import DTYPES
from shapecheck.counting.per_token import PEAK_TFLOPS
from shapecheck.counting.tree import MODES, Settings
from shapecheck.render.report import exit_code, render
from shapecheck.report import IMPLS
from shapecheck.render.report_chart import chart, write_chart
from shapecheck.target import user_code

FORMATS = ("table", "json", "markdown", "csv")
DTYPE_NAMES = tuple(DTYPES)
SIZE_FLAGS = ("d_model", "heads", "layers", "d_ff", "d_k", "d_v", "batch", "vocab", "max_seq")
MODEL_HELP = "; ".join(f"{name}: {kind.help}" for name, kind in KINDS.items())


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        target: Optional[str] = typer.Argument(None, metavar="TARGET", help="file.py:Name, package.module:Name, or transformers:ClassName with --config."),
        config_file: Optional[str] = options.text("--config", metavar="FILE", help="A transformers config.json (local; no hub access); the class from its 'architectures' unless TARGET names it."),
        mode: str = options.choice("--mode", choices=MODES, default="forward", help="forward, train (forward + backward), or decode (one token against a KV cache)."),
        context: int = options.positive("--context", default=2048, help="decode: tokens in the KV cache (kv_cache memory in decode; forward and train size it by --seq-len)."),
        dtype: Optional[str] = options.choice("--dtype", choices=DTYPE_NAMES, help="Element type for memory (default: the config's, else float32)."),
        depth: Optional[int] = options.positive("--depth", minimum=0, help="Rows down to this depth of the module tree (default: all)."),
        recompute: bool = options.flag("--recompute", help="train: activation recomputation (one more forward)."),
        causal_flops: str = options.choice("--causal-flops", choices=("full", "half"), default="full", help="Causal attention: the full S×S scores, or the half flash kernels compute."),
        tokens_per_second: Optional[int] = options.positive("--tokens-per-second", help="Measured training throughput, for MFU."),
        peak_tflops: Optional[int] = options.positive("--peak-tflops", help="The device's dense peak in TFLOPS, for MFU."),
        device_name: Optional[str] = options.choice("--device", choices=(*DEVICES, *PEAK_TFLOPS), help="Where it runs: cpu (default) or cuda, which pick the attention kernel; a GPU by name is cuda with its published dense peak for MFU."),
        attention_kernel: Optional[str] = options.choice("--attention-kernel", choices=KERNELS, help="train: the SDPA kernel whose saved tensors make the activations (default: what torch picks on --device)."),
        init: Optional[dict] = options.init(),
        heads: Optional[int] = options.heads("Attention heads h (default 8; a TARGET's or preset's own)."),
        d_model: Optional[int] = options.d_model("Model width (default 512; a TARGET's or preset's own)."),
        model: Optional[str] = options.choice("--model", choices=tuple(KINDS), help=f"A built-in model. {MODEL_HELP}."),
        layers: Optional[int] = options.positive("--layers", help="Layers per stack (default 6)."),
        d_ff: Optional[int] = options.positive("--d-ff", help="Feed-forward width (default 4·d_model)."),
        d_k: Optional[int] = options.positive("--d-k", help="Per-head query/key width (default d_model/h)."),
        d_v: Optional[int] = options.positive("--d-v", help="Per-head value width (default d_model/h)."),
        seq_len: Optional[str] = options.length("--seq-len", help="Sequence length (default 128), or a name such as S: FLOPs as polynomials in it (--mode forward)."),
        batch: Optional[int] = options.positive("--batch", help="Batch size (default 1)."),
        vocab: Optional[int] = options.positive("--vocab", help="Vocabulary (models with embeddings or heads)."),
        max_seq: Optional[int] = options.positive("--max-seq", help="Learned position table size (bert, gpt)."),
        preset: Optional[str] = options.preset(tuple(PRESETS)),
        impl: Optional[str] = options.choice("--impl", choices=IMPLS, help="Attention path of mha/encoder/decoder: sdpa (default) or math; the counts are the same."),
        output_format: str = options.output_format(FORMATS),
        strict: bool = options.flag("--strict", help="Exit 1 when an op did work that no formula counts."),
        plot: bool = options.flag("--plot", help="Also chart FLOPs against sequence length, by part (terminal)."),
        plot_file: Optional[str] = options.text("--plot-file", metavar="FILE", help="Write that chart to a PNG/SVG file (needs matplotlib)."),
        all_layers: bool = options.flag("--all-layers", help="Table: show every layer, not layer 0 and a summary of identical ones."),
        fvcore: bool = options.flag("--fvcore", help="Add fvcore's count per row as a cross-check (fvcore reports MACs and calls them flops)."),
    ) -> None:
        """Per-module parameters and FLOPs with their closed-form formulas, measured on the meta device.

        Any model: a TARGET, a transformers config, a built-in kind (--model) or a preset. Rows come from its
        module tree; each recognised part (attention, MLP, norm, embedding, MoE ...) carries its formula.
        """
        from shapecheck.report import parse_length

        length = parse_length(seq_len)
        settings = Settings(batch=batch or 1, mode=mode,
                            context=context, dtype=dtype or "float32", depth=depth, recompute=recompute,
                            causal_flops=causal_flops, tokens_per_second=tokens_per_second,
                            peak_tflops=float(peak_tflops) if peak_tflops else PEAK_TFLOPS.get(device_name or ""),
                            fold=not all_layers, device="cpu" if device_name in (None, "cpu") else "cuda",
                            attention_kernel=attention_kernel)
        _check_combinations(length, settings, output_format, plot, plot_file, fvcore)
        if target is not None or config_file is not None:
            catalog = dict(model=model, preset=preset, layers=layers, d_ff=d_ff, d_k=d_k, d_v=d_v, vocab=vocab,
                           max_seq=max_seq, impl=impl)
            given = [name for name, value in catalog.items() if value is not None]
            if given:
                usage_error(f"--{given[0].replace('_', '-')} applies to the built-in models (--model/--preset), "
                            "not to a TARGET or --config")
            from shapecheck.cli.config_file import check_config_file
            from shapecheck.counting.load import load_model

            if config_file is not None:
                check_config_file(config_file)

            with user_code():
                module, name = load_model(target, config_file, init=init, sizes={"d_model": d_model, "heads": heads})
            feed, described = None, {}
        else:
            from shapecheck.report import build, resolve_config

            if init:
                usage_error("--init sets a TARGET's constructor arguments; --model and --preset take size flags")
            sizes = dict(zip(SIZE_FLAGS, (d_model, heads, layers, d_ff, d_k, d_v, batch, vocab, max_seq)))
            config = resolve_config(model, preset, seq_len=seq_len, impl=impl, **sizes)
            module, name, feed = build(config)
            described = config.described()
        published = PRESETS[preset].dtype if preset in PRESETS else None
        with user_code():
            result = replace(_report(module, name, settings, feed, length, fvcore, dtype, published), sizes=described)
        typer.echo(render(result, output_format, strict), nl=False)
        if plot:
            typer.echo(chart(module, settings.batch), nl=False)
        if plot_file:
            write_chart(module, name, settings.batch, plot_file)
            typer.echo(f"wrote the chart to {plot_file}", err=True)
        if exit_code(result, strict):
            raise typer.Exit(EXIT_FINDINGS)


def _check_combinations(length, settings, output_format: str, plot: bool, plot_file: Optional[str], fvcore: bool) -> None:
    if isinstance(length, str) and settings.mode != "forward":
        usage_error(f"--seq-len {length} (a polynomial in {length}) applies to --mode forward; give a number with --mode {settings.mode}")
    if settings.attention_kernel and settings.mode != "train":
        usage_error(f"--attention-kernel picks what a training step saves; it applies to --mode train, not --mode {settings.mode}")
    if isinstance(length, str) and fvcore:
        usage_error(f"--fvcore runs fvcore at one length; give a number, not --seq-len {length}")
    if plot and output_format in ("json", "csv"):
        usage_error(f"--plot draws a terminal chart, which would break --format {output_format} output; "
                    "use --format table or markdown with --plot, or --plot-file")
    if plot_file is not None:
        _require_matplotlib()


def _report(module, name: str, settings, feed, length, fvcore: bool, dtype: Optional[str], published: Optional[str] = None):
    """The report in ``--dtype``, else the config's (a preset's: its published config's), else float32."""
    from shapecheck.counting.hf import config_dtype
    from shapecheck.counting.symbolic import report_at

    declared = config_dtype(module) or published
    source = "--dtype" if dtype else "the config's torch_dtype" if declared else "the default: no dtype in the config"
    settings = replace(settings, dtype=dtype or declared or "float32", dtype_source=source)
    return report_at(module, name, settings, length, feed, fvcore)


def _require_matplotlib() -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        usage_error("--plot-file needs matplotlib, which is not installed; pip install matplotlib, or use --plot")


__all__ = ["register"]
