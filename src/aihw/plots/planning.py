"""Plots of the chapter "Planning a training run": every published run's predicted throughput against the
published one, at a glance (the long validation table in one picture)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from aihw.plots.style import COLUMN_WIDTH_IN, PALETTE, legend_outside, styled


@styled
def plot_validation(rows: Sequence[Mapping], *, target: float = 0.15, ax=None):
    """Predicted ÷ published TFLOP/s per GPU for each published run (rows of
    :func:`aihw.planning.published.table`): a dot per run, the optimistic-pessimistic band as a bar, the
    ±``target`` region shaded; runs whose layout the planner judges not to fit are hollow."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(
        figsize=(COLUMN_WIDTH_IN, 1.5 + 0.27 * len(rows)), layout="constrained")
    y = np.arange(len(rows))
    ratio = np.array([r["ratio"] for r in rows])
    low = np.array([r["band_tflops"][0] / r["published_tflops"] for r in rows])
    high = np.array([r["band_tflops"][1] / r["published_tflops"] for r in rows])
    ax.axvspan(1 - target, 1 + target, color="grey", alpha=0.15, lw=0, label=f"within ±{target:.0%}")
    ax.axvline(1, color="black", lw=1)
    sources = list(dict.fromkeys(str(r["table"]) for r in rows))
    for i, source in enumerate(sources):
        mine = np.array([str(r["table"]) == source for r in rows])
        fits = np.array([bool(r["fits"]) for r in rows])
        colour = PALETTE[i % len(PALETTE)]
        ax.errorbar(ratio[mine], y[mine], xerr=[ratio[mine] - low[mine], high[mine] - ratio[mine]], fmt="none",
                    ecolor=colour, capsize=2, lw=1)
        ax.plot(ratio[mine & fits], y[mine & fits], "o", color=colour, label=source)
        if (mine & ~fits).any():
            ax.plot(ratio[mine & ~fits], y[mine & ~fits], "o", mfc="white", color=colour)
    ax.set_yticks(y, [textwrap.shorten(str(r["run"]), 30, placeholder="…") for r in rows], fontsize="small")
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2g}"))
    ax.set(xlabel="predicted ÷ published TFLOP/s per GPU\n(bar: optimistic to pessimistic)",
           title="Planner against published runs")
    legend_outside(ax, ncols=1)
    return fig


__all__ = ["plot_validation"]
