"""Plots of the "Making models cheaper" chapter: quantization grids and errors, sparsity curves, latency, the
accuracy-size-latency trade-off. Each takes plain numbers (lists of dicts, arrays) and ``ax=None``, and returns
the figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from aihw.plots.style import COLUMN_WIDTH_IN, PALETTE, legend_outside, place_labels, styled

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


def _mean_low_high(value) -> tuple[float, float, float]:
    """(mean, low, high) in % of an accuracy: a number (low = high = mean) or an interval with .mean/.low/.high
    (:class:`aihw.stats.Interval`)."""
    if hasattr(value, "mean"):
        return 100 * value.mean, 100 * value.low, 100 * value.high
    return 100 * float(value), 100 * float(value), 100 * float(value)


def _accuracy_of(row: Mapping):
    return row["ci"] if "ci" in row else row["accuracy"]


def _interval_line(ax, xs, values, fmt: str, **kwargs) -> None:
    """A line through the means with 95% error bars and a light band when ``values`` are intervals."""
    mean, low, high = (np.array(v) for v in zip(*(_mean_low_high(v) for v in values), strict=True))
    line = ax.errorbar(xs, mean, yerr=[mean - low, high - mean], fmt=fmt, capsize=3, **kwargs)
    if np.any(high > low):
        ax.fill_between(xs, low, high, color=line[0].get_color(), alpha=0.15, lw=0)


def _reference_line(ax, value, label: str, **kwargs) -> None:
    mean, low, high = _mean_low_high(value)
    ax.axhline(mean, lw=1, label=label, **kwargs)
    if high > low:
        ax.axhspan(low, high, color=kwargs.get("color", "k"), alpha=0.1, lw=0)


@styled
def plot_sparsity_curves(rows: Sequence[Mapping], *, baseline, ax=None):
    """Accuracy (%) against sparsity, one line per (structure, fine-tuned) pair (rows with "structure",
    "fine_tuned", "sparsity" and either "accuracy" or "ci", a mean with its 95% interval, drawn as error bars
    and a band, as from :func:`aihw.cheaper.prune.sparsity_sweep_seeds`). ``baseline``: the unpruned model's
    accuracy, a number or an interval (a shaded band)."""
    fig, ax = _axes(ax)
    keys = list(dict.fromkeys((r["structure"], r["fine_tuned"]) for r in rows))
    for structure, tuned in keys:
        pts = sorted(((r["sparsity"], _accuracy_of(r)) for r in rows
                      if r["structure"] == structure and r["fine_tuned"] == tuned), key=lambda p: p[0])
        _interval_line(ax, [p[0] for p in pts], [p[1] for p in pts], "o-" if tuned else "o--",
                       label=f"{structure}, {'fine-tuned' if tuned else 'no fine-tuning'}")
    _reference_line(ax, baseline, "unpruned", color="k", ls=":")
    n = next((r["ci"].n for r in rows if "ci" in r), None)
    ax.set(xlabel="sparsity (fraction of weights or neurons removed)", ylabel="test accuracy (%)",
           title="Accuracy against sparsity" + (f" (mean of {n} seeds, 95% interval)" if n else ""))
    legend_outside(ax)
    return fig


def _short_scheme(label: str) -> str:
    """A scheme label short enough for a tick: 'int4 per-channel(axis=0) sym' -> 'int4 per-channel sym',
    'W8A8: int8 weights + ...' -> 'W8A8'."""
    return label.split(":")[0].replace("per-channel(axis=0)", "per-channel")


@styled
def plot_paired_differences(rows: Sequence[Mapping], *, key: str = "vs_fp32", xlabel: str = "", title: str = "",
                            ax=None):
    """A forest plot: for each row (with "scheme" or "name" and an interval under ``key``) the mean difference in
    accuracy points and its 95% interval as a horizontal bar; the dashed line is zero. A bar that crosses it
    is a difference inside the noise."""
    fig, ax = _axes(ax, (COLUMN_WIDTH_IN, 0.8 + 0.42 * len(rows)))
    names = [_short_scheme(r.get("scheme", r.get("name", ""))) for r in rows]
    mean, low, high = (np.array(v) for v in zip(*(_mean_low_high(r[key]) for r in rows), strict=True))
    y = np.arange(len(rows))
    clear = (low > 0) | (high < 0)
    for mask, colour, label in ((clear, PALETTE[1], "interval excludes 0"), (~clear, PALETTE[0], "interval covers 0")):
        if mask.any():
            ax.errorbar(mean[mask], y[mask], xerr=[mean[mask] - low[mask], high[mask] - mean[mask]], fmt="o",
                        capsize=3, color=colour, label=label)
    ax.axvline(0, color="k", lw=1, ls="--")
    ax.set_yticks(y, names, fontsize="small")
    ax.invert_yaxis()
    ax.set(xlabel=xlabel or "accuracy difference (points), mean and 95% interval", title=title)
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
def plot_distillation(rows: Sequence[Mapping], *, control, teacher, ax=None):
    """Distilled student's accuracy (%) against temperature (rows with "temperature" and "accuracy", or "ci", a
    mean with its 95% interval, drawn as error bars and a band, as from
    :func:`aihw.cheaper.distill.temperature_sweep_seeds`), with the student trained alone and the teacher as
    horizontal lines (each a number or an interval, drawn as a shaded band)."""
    fig, ax = _axes(ax)
    pts = sorted(((r["temperature"], _accuracy_of(r)) for r in rows), key=lambda p: p[0])
    _interval_line(ax, [p[0] for p in pts], [p[1] for p in pts], "o-", label="distilled student")
    _reference_line(ax, control, f"student alone ({_mean_low_high(control)[0]:.1f}%)", color=PALETTE[1], ls="--")
    _reference_line(ax, teacher, f"teacher ({_mean_low_high(teacher)[0]:.1f}%)", color="k", ls=":")
    ax.set(xscale="log", xlabel="temperature T", ylabel="test accuracy (%)", title="Distillation")
    ax.set_xticks([p[0] for p in pts], [f"{p[0]:g}" for p in pts])
    ax.xaxis.set_minor_formatter(NullFormatter())
    legend_outside(ax)
    return fig


@styled
def plot_accuracy_bars(accuracies: Mapping[str, object], *, title: str = "", ax=None):
    """Test accuracy (%) of a few named models as horizontal bars, the value printed on each. A value may be a
    number or an interval (.mean/.low/.high, e.g. :class:`aihw.stats.Interval`): the bar is the mean and an error
    bar the 95% interval."""
    fig, ax = _axes(ax, (COLUMN_WIDTH_IN, 2.8))
    names = list(accuracies)
    mean, low, high = (np.array(v) for v in zip(*(_mean_low_high(accuracies[n]) for n in names), strict=True))
    bars = ax.barh(np.arange(len(names)), mean, color="#8172b2")
    if np.any(high > low):
        ax.errorbar(mean, np.arange(len(names)), xerr=[mean - low, high - mean], fmt="none", ecolor="k", capsize=3)
    for bar, v, hi in zip(bars, mean, high, strict=True):
        ax.annotate(f"{v:.1f}%", (hi, bar.get_y() + bar.get_height() / 2), xytext=(6, 0),
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
        ax.set(xscale="log", xlabel=label, ylabel="test accuracy (%)")
        _log_ticks(ax.xaxis)
        ax.grid(True, alpha=0.3)
    axes[0].set_title("Accuracy against size")
    axes[1].set_title("Accuracy against latency")
    legend_outside(axes[0], where="right")
    for ax, key, scale in ((axes[0], "size_bytes", 1e3), (axes[1], "latency_s", 1e-6)):
        ax.margins(x=0.12, y=0.12)  # room for the labels of the outermost points
        pts = [p for p in points if p.get(key) is not None]
        place_labels(ax, [p[key] / scale for p in pts], [100 * p["accuracy"] for p in pts], [p["name"] for p in pts])
    return fig


__all__ = ["plot_weight_grid", "plot_layer_sqnr", "plot_scheme_accuracy", "plot_int8_speedup",
           "plot_sparsity_curves", "plot_paired_differences", "plot_latency_bars", "plot_distillation", "plot_accuracy_bars", "plot_tradeoff"]
