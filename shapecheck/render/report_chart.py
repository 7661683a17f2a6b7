"""The chart of ``shapecheck report``: each part's share of the FLOPs against sequence length.

The shares come from the closed forms of the parts the recogniser finds in the model
(``counting.closed_forms.flops_by_part``): attention scores and values, the attention's projections,
the feed-forward, other Linear layers. ``chart`` draws it in the terminal; ``write_chart`` as a figure
for a paper or a blog (matplotlib, the optional ``plot`` extra): a stacked share (0 to 100 %) against S
on a log axis, one fixed colour per part across every model, the legend outside the plot so no label
is clipped, 1600 px wide as PNG (or SVG).
"""

from __future__ import annotations

import io

from torch import nn

from shapecheck.errors import UsageError

# One colour per part, the same in every chart (matplotlib's tab10 entries, by name).
PART_COLOURS = {"attention": "tab:red", "projection": "tab:blue", "ffn": "tab:green", "head": "tab:brown"}
FIGURE_INCHES, DPI = (8, 4.5), 200  # 1600 × 900 px


def chart_lengths(d_model: int) -> list[int]:
    """Powers of two from 64 up to past the whole-layer crossover (at least 8192)."""
    top = max(8192, 8 * d_model)
    lengths, n = [], 64
    while n <= top:
        lengths.append(n)
        n *= 2
    return lengths


def flops_by_part(module: nn.Module, batch: int = 1) -> tuple[list[int], dict[str, list[int]]]:
    """The lengths charted and each part's closed-form FLOPs at each."""
    from shapecheck.counting.anatomy import parts
    from shapecheck.counting.closed_forms import flops_by_part as by_part

    found = parts(module)
    widths = [p.sizes["d_model"] for p in found.values() if p.kind == "attention"]
    lengths = chart_lengths(widths[0] if widths else 512)
    data = by_part(found, lengths, batch)
    if not data:
        raise UsageError("--plot: no attention, feed-forward or Linear part was recognised in this model; nothing to chart")
    return lengths, data


def chart(module: nn.Module, batch: int = 1, width: int = 60) -> str:
    """A terminal chart: for each length, one bar split by part in proportion to its FLOPs."""
    from rich.console import Console

    lengths, parts = flops_by_part(module, batch)
    glyphs = dict(zip(sorted(parts), "█▓▒░#=+:"))
    console = Console(record=True, width=width + 40, file=io.StringIO())
    console.print("matmul FLOPs of the recognised parts against sequence length, share by part:", markup=False)
    for i, n in enumerate(lengths):
        total = sum(v[i] for v in parts.values())
        bar = "".join(glyphs[name] * round(width * parts[name][i] / total) for name in sorted(parts))
        console.print(f"S={n:<6} {bar} {total:.3g}", markup=False, highlight=False)
    console.print("  ".join(f"{glyphs[name]} {name}" for name in sorted(parts)), markup=False, highlight=False)
    return console.export_text()


def shares(parts: dict[str, list[int]]) -> dict[str, list[float]]:
    """Each part's fraction of the total at each length."""
    totals = [sum(values) for values in zip(*parts.values())]
    return {name: [v / t if t else 0.0 for v, t in zip(values, totals)] for name, values in parts.items()}


def write_chart(module: nn.Module, title: str, batch: int, path: str) -> None:
    """The stacked share chart as a file (PNG/SVG by the name's extension)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lengths, parts = flops_by_part(module, batch)
    fractions = shares(parts)
    names = sorted(fractions)
    fig, ax = plt.subplots(figsize=FIGURE_INCHES, dpi=DPI)
    ax.stackplot(lengths, *[[100 * v for v in fractions[k]] for k in names], labels=names,
                 colors=[PART_COLOURS[k] for k in names])
    ax.set(xscale="log", xlim=(lengths[0], lengths[-1]), ylim=(0, 100), xlabel="sequence length S",
           ylabel="share of FLOPs (%)", title=f"{title.split(':')[0]}: share of FLOPs by part")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    try:
        fig.savefig(path, bbox_inches="tight")
    except (OSError, ValueError) as error:
        raise UsageError(f"cannot write --plot-file {path}: {error}") from None
    finally:
        plt.close(fig)
