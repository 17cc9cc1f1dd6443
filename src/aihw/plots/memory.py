"""Memory plots: stacked bars of the estimate's components, and predicted against measured bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from aihw.memory.estimator import COMPONENTS, GB, MemoryEstimate
from aihw.plots.style import COLUMN_WIDTH_IN, legend_outside, styled, tidy

COLOURS = {"weights": "#1f77b4", "gradients": "#ff7f0e", "optimizer": "#2ca02c", "master_weights": "#9467bd",
           "activations": "#d62728", "kv_cache": "#8c564b", "overhead": "#7f7f7f", "peak": "#17becf"}


@styled
def plot_breakdown(estimates: MemoryEstimate | Mapping[str, MemoryEstimate], *, per_device: bool = True,
                   capacity_bytes: float | None = None, capacity_label: str = "chip memory", ax=None):
    """One stacked bar per estimate, a segment per component, in GB (1e9 bytes); optional capacity line.

    ``per_device`` selects the per-device split (True) or the single-device total (False). Returns the figure.
    """
    if isinstance(estimates, MemoryEstimate):
        estimates = {"estimate": estimates}
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.5))
    labels = list(estimates)
    x = np.arange(len(labels))
    bottom = np.zeros(len(labels))
    for comp in COMPONENTS:
        vals = np.array([(e.per_device if per_device else e.total)[comp] for e in estimates.values()]) / GB
        if not vals.any():
            continue
        ax.bar(x, vals, bottom=bottom, color=COLOURS[comp], label=comp.replace("_", " "), width=0.6)
        bottom += vals
    for xi, top in zip(x, bottom, strict=True):
        ax.annotate(f"{top:,.0f} GB" if top >= 100 else f"{top:.3g} GB", (xi, top), ha="center", va="bottom",
                    fontsize="small")
    if capacity_bytes:
        # in the legend, not written on the line: a label there collides with the bars' totals
        ax.axhline(capacity_bytes / GB, color="black", ls="--", lw=1.2,
                   label=f"{capacity_label}: {capacity_bytes / GB:,.0f} GB")
    ax.set_xticks(x, labels, rotation=15 if len(labels) > 3 else 0, ha="right" if len(labels) > 3 else "center")
    ax.set_ylabel("memory (GB = 1e9 bytes)")
    ax.set_title("per device" if per_device else "one device holding everything")
    ax.set_ylim(0, max(bottom.max(), (capacity_bytes or 0) / GB) * 1.15 or 1)
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_predicted_vs_measured(rows: Sequence[Mapping], *, ax=None, title: str = ""):
    """Grouped bars, predicted vs measured bytes (MB) per component; rows from :func:`memory_measure.compare`."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4))
    comps = [r["component"] for r in rows]
    x = np.arange(len(comps))
    pred = np.array([r["predicted"] for r in rows]) / 1e6
    meas = np.array([r["measured"] for r in rows]) / 1e6
    ax.bar(x - 0.2, pred, width=0.4, color=[COLOURS.get(c, "#999") for c in comps], alpha=0.45,
           label="predicted", edgecolor="black")
    ax.bar(x + 0.2, meas, width=0.4, color=[COLOURS.get(c, "#999") for c in comps], label="measured",
           edgecolor="black", hatch="//")
    for xi, r in zip(x, rows, strict=True):
        ax.annotate(f"x{r['ratio']:.3f}", (xi + 0.2, r["measured"] / 1e6), ha="center", va="bottom", fontsize="small")
    ax.set_xticks(x, [c.replace("_", " ") for c in comps])
    ax.set_ylabel("MB (1e6 bytes)")
    ax.set_title(title or "predicted vs measured (ratio = measured / predicted)")
    legend_outside(ax)
    tidy(fig)
    return fig


MEASURED_COMPONENTS = ("weights", "gradients", "optimizer", "activations")


@styled
def plot_prediction_with_measurement(estimate: MemoryEstimate, rows: Sequence[Mapping], *, ax=None,
                                     title: str = ""):
    """The estimate's stacked bar with the measurement of the same config stacked beside it, in MB (1e6 bytes).

    ``rows`` come from :func:`memory_measure.compare` for the config ``estimate`` describes. Predicted and
    measured peaks are drawn as black markers across their bars (dashed: predicted, solid: measured).
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.5))
    by = {r["component"]: r for r in rows}
    for x, key in ((0, "predicted"), (1, "measured")):
        bottom = 0.0
        for comp in MEASURED_COMPONENTS:
            value = (estimate.total[comp] if key == "predicted" else by[comp]["measured"]) / 1e6
            if value <= 0:
                continue
            ax.bar(x, value, bottom=bottom, width=0.55, color=COLOURS[comp], edgecolor="black",
                   hatch="//" if key == "measured" else None, alpha=0.5 if key == "predicted" else 1.0,
                   label=comp if x == 0 else None)
            bottom += value
        ax.annotate(f"{bottom:.3g} MB", (x, bottom), ha="center", va="bottom", fontsize="small")
        if "peak" in by:
            peak = by["peak"][key] / 1e6
            ax.hlines(peak, x - 0.38, x + 0.38, color="black", lw=2, ls="--" if key == "predicted" else "-",
                      label=f"{key} peak" + (f" (x{by['peak']['ratio']:.2f})" if key == "measured" else ""))
    ax.set_xticks([0, 1], ["predicted (estimator)", "measured on this machine"])
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylabel("MB (1e6 bytes)")
    ax.set_title(title or "the same config, predicted and measured")
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_measured_scatter(rows: Sequence[Mapping], *, ax=None, band: float = 0.10):
    """Measured against predicted bytes, one point per (config, component), log-log, with a +-band wedge."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 5))
    rows = [r for r in rows if r["predicted"] > 0 and r["measured"] > 0]
    for comp in dict.fromkeys(r["component"] for r in rows):
        pts = np.array([(r["predicted"], r["measured"]) for r in rows if r["component"] == comp])
        ax.scatter(pts[:, 0], pts[:, 1], color=COLOURS.get(comp, "#999"), label=comp.replace("_", " "), s=25)
    lo = min(min(r["predicted"], r["measured"]) for r in rows) * 0.7
    hi = max(max(r["predicted"], r["measured"]) for r in rows) * 1.4
    line = np.array([lo, hi])
    ax.plot(line, line, color="black", lw=1, label="measured = predicted")
    ax.fill_between(line, line * (1 - band), line * (1 + band), color="grey", alpha=0.2, label=f"+-{band:.0%}")
    ax.set(xscale="log", yscale="log", xlabel="predicted bytes", ylabel="measured bytes")
    legend_outside(ax)
    tidy(fig)
    return fig
