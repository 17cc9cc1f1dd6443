"""Plots of the "Making models cheaper" chapter: quantization grids and errors, sparsity curves, latency, the
accuracy-size-latency trade-off. Each takes plain numbers (lists of dicts, arrays) and ``ax=None``, and returns
the figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from aihw.plots.style import COLUMN_WIDTH_IN, legend_outside, styled

FAMILY_MARKERS = {"fp32": "*", "quantized": "o", "int8 dynamic": "D", "pruned": "s", "distilled": "^",
                  "student alone": "v", "distilled + int8": "P"}


def _log_ticks(axis) -> None:
    """Labelled ticks at 1, 2 and 5 per decade, so a narrow log range (70-85 µs) still shows numbers."""
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(LogLocator(subs="auto"))
    axis.set_minor_formatter(NullFormatter())


def _axes(ax, figsize=(COLUMN_WIDTH_IN, 3.8)):
    return (ax.figure, ax) if ax is not None else plt.subplots(figsize=figsize, layout="constrained")


@styled
def plot_weight_grid(values: np.ndarray, levels: np.ndarray, *, title: str = "", ax=None):
    """Histogram of ``values`` with the quantization grid ``levels`` drawn over it (every level if ≤ 64,
    otherwise as a rug of ticks along the bottom)."""
    fig, ax = _axes(ax)
    values, levels = np.asarray(values, dtype=float).ravel(), np.asarray(levels, dtype=float).ravel()
    lo, hi = values.min(), values.max()
    pad = 0.05 * (hi - lo or 1.0)
    shown = levels[(levels >= lo - pad) & (levels <= hi + pad)]
    ax.hist(values, bins=120, color="#4c72b0", alpha=0.8, label="weights")
    if len(shown) <= 64:
        for level in shown:
            ax.axvline(level, color="#c44e52", lw=0.7, alpha=0.7)
        ax.plot([], [], color="#c44e52", lw=0.7, label=f"grid ({len(shown)} levels in range)")
    else:
        ax.plot(shown, np.zeros_like(shown), "|", color="#c44e52", ms=8, label=f"grid ({len(shown)} levels in range)")
    ax.set(xlabel="weight value", ylabel="count", title=title)
    legend_outside(ax)
    return fig


@styled
def plot_layer_sqnr(rows: Sequence[Mapping], ax=None):
    """Grouped bars of signal-to-quantization-noise ratio (dB) per layer and scheme (rows from
    :func:`aihw.cheaper.quantize_model.layer_errors`). Higher is better; each extra bit adds about 6 dB."""
    fig, ax = _axes(ax, (COLUMN_WIDTH_IN, 4))
    layers = list(dict.fromkeys(r["layer"] for r in rows))
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    width = 0.8 / len(schemes)
    for j, scheme in enumerate(schemes):
        vals = [next(r["sqnr_db"] for r in rows if r["layer"] == layer and r["scheme"] == scheme) for layer in layers]
        ax.bar(np.arange(len(layers)) + (j - (len(schemes) - 1) / 2) * width, vals, width, label=scheme)
    ax.set_xticks(np.arange(len(layers)), [f"layer {name}" for name in layers])
    ax.set(ylabel="SQNR (dB, higher is better)", title="Weight quantization error per layer")
    legend_outside(ax)
    return fig


@styled
def plot_scheme_accuracy(rows: Sequence[Mapping], *, baseline: float, ax=None):
    """Test accuracy (%) per quantization scheme (rows with "scheme", "accuracy"), against fp32's."""
    fig, ax = _axes(ax, (COLUMN_WIDTH_IN, 4))
    names = [r["scheme"] for r in rows]
    acc = [100 * r["accuracy"] for r in rows]
    ax.barh(np.arange(len(rows)), acc, color="#4c72b0")
    ax.axvline(100 * baseline, color="k", ls="--", lw=1, label=f"fp32 ({100 * baseline:.1f}%)")
    ax.set_yticks(np.arange(len(rows)), names, fontsize="small")
    ax.invert_yaxis()
    ax.set(xlabel="test accuracy (%)", xlim=(0, 100), title="Accuracy after quantization")  # bars start at zero
    legend_outside(ax)
    return fig


@styled
def plot_int8_speedup(rows: Sequence[Mapping], ax=None):
    """Speed-up of dynamic INT8 over fp32 (fp32 time / int8 time) against batch size, one line per width
    (rows with "width", "batch", "fp32_s", "int8_s"). Above 1: INT8 is faster."""
    fig, ax = _axes(ax)
    for width in sorted({r["width"] for r in rows}):
        pts = sorted((r["batch"], r["fp32_s"] / r["int8_s"]) for r in rows if r["width"] == width)
        ax.plot(*zip(*pts, strict=True), "o-", label=f"hidden width {width}")
    ax.axhline(1, color="k", lw=1, ls="--")
    ax.set(xscale="log", xlabel="batch size", ylabel="fp32 time / INT8 time", title="Dynamic INT8 on this CPU")
    legend_outside(ax)
    return fig


@styled
def plot_sparsity_curves(rows: Sequence[Mapping], *, baseline: float, ax=None):
    """Accuracy (%) against sparsity, one line per (structure, fine-tuned) pair (rows with "structure",
    "fine_tuned", "sparsity", "accuracy")."""
    fig, ax = _axes(ax)
    keys = list(dict.fromkeys((r["structure"], r["fine_tuned"]) for r in rows))
    for structure, tuned in keys:
        pts = sorted((r["sparsity"], 100 * r["accuracy"]) for r in rows
                     if r["structure"] == structure and r["fine_tuned"] == tuned)
        ax.plot(*zip(*pts, strict=True), "o-" if tuned else "o--",
                label=f"{structure}, {'fine-tuned' if tuned else 'no fine-tuning'}")
    ax.axhline(100 * baseline, color="k", lw=1, ls=":", label="unpruned")
    ax.set(xlabel="sparsity (fraction of weights or neurons removed)", ylabel="test accuracy (%)",
           title="Accuracy against sparsity")
    legend_outside(ax)
    return fig


@styled
def plot_latency_bars(latencies_s: Mapping[str, float], *, flops: Mapping[str, float] | None = None, ax=None):
    """Measured latency (µs) per model as bars, annotated with its dense FLOP count (MFLOP) if given."""
    fig, ax = _axes(ax)
    names = list(latencies_s)
    vals = [1e6 * latencies_s[n] for n in names]
    bars = ax.barh(np.arange(len(names)), vals, color="#55a868")
    ax.set_yticks(np.arange(len(names)), names, fontsize="small")
    ax.invert_yaxis()
    if flops:
        for bar, name in zip(bars, names, strict=True):
            ax.annotate(f"{flops[name] / 1e6:.1f} MFLOP", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                        xytext=(4, 0), textcoords="offset points", va="center", fontsize="small")
    ax.set(xlabel="measured latency (µs per batch)", xlim=(0, 1.3 * max(vals)), title="Latency on this machine")
    return fig


@styled
def plot_distillation(rows: Sequence[Mapping], *, control: float, teacher: float, ax=None):
    """Distilled student's accuracy (%) against temperature (rows with "temperature", "accuracy"), with the
    student trained alone and the teacher as horizontal lines."""
    fig, ax = _axes(ax)
    pts = sorted((r["temperature"], 100 * r["accuracy"]) for r in rows)
    ax.plot(*zip(*pts, strict=True), "o-", label="distilled student")
    ax.axhline(100 * control, color="#c44e52", ls="--", label=f"student alone ({100 * control:.1f}%)")
    ax.axhline(100 * teacher, color="k", ls=":", label=f"teacher ({100 * teacher:.1f}%)")
    ax.set(xscale="log", xlabel="temperature T", ylabel="test accuracy (%)", title="Distillation")
    legend_outside(ax)
    return fig


@styled
def plot_accuracy_bars(accuracies: Mapping[str, float], *, title: str = "", ax=None):
    """Test accuracy (%) of a few named models as horizontal bars, the value printed on each."""
    fig, ax = _axes(ax, (COLUMN_WIDTH_IN, 2.8))
    names = list(accuracies)
    vals = [100 * accuracies[n] for n in names]
    bars = ax.barh(np.arange(len(names)), vals, color="#8172b2")
    for bar, v in zip(bars, vals, strict=True):
        ax.annotate(f"{v:.1f}%", (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize="small")
    ax.set_yticks(np.arange(len(names)), names, fontsize="small")
    ax.invert_yaxis()
    ax.set(xlabel="test accuracy (%)", xlim=(0, 112), title=title)  # bars start at zero
    return fig


@styled
def plot_tradeoff(points: Sequence[Mapping], axes=None):
    """Two panels: accuracy against size (bytes) and against latency (s) for every model (dicts with
    "name", "family", "accuracy", "size_bytes", "latency_s"). Up and to the left is better. A point whose
    latency is None (simulated numerics: no real speed to show) appears only in the size panel."""
    fig, axes = (axes[0].figure, axes) if axes is not None else plt.subplots(2, 1, figsize=(COLUMN_WIDTH_IN, 7.4), layout="constrained")
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    families = list(dict.fromkeys(p["family"] for p in points))
    for ax, key, scale, label in ((axes[0], "size_bytes", 1e3, "size (kB = 1e3 bytes)"),
                                  (axes[1], "latency_s", 1e-6, "latency (µs per batch)")):
        for i, family in enumerate(families):
            pts = [p for p in points if p["family"] == family and p.get(key) is not None]
            if not pts:
                continue
            ax.scatter([p[key] / scale for p in pts], [100 * p["accuracy"] for p in pts],
                       marker=FAMILY_MARKERS.get(family, "o"), s=60, color=colours[i % len(colours)], label=family)
            for p in pts:
                ax.annotate(p["name"], (p[key] / scale, 100 * p["accuracy"]), xytext=(4, 3),
                            textcoords="offset points", fontsize="small")
        ax.set(xscale="log", xlabel=label, ylabel="test accuracy (%)")
        _log_ticks(ax.xaxis)
        ax.grid(True, alpha=0.3)
    axes[0].set_title("Accuracy against size")
    axes[1].set_title("Accuracy against latency")
    legend_outside(axes[0], where="right")
    return fig


__all__ = ["plot_weight_grid", "plot_layer_sqnr", "plot_scheme_accuracy", "plot_int8_speedup",
           "plot_sparsity_curves", "plot_latency_bars", "plot_distillation", "plot_accuracy_bars", "plot_tradeoff"]
