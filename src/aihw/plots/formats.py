"""Plots of the chapter "Number formats and mixed precision": format grids, bit fields, loss curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from aihw.formats import numerics
from aihw.plots.style import legend_outside, styled

RECIPE_COLOURS = {"fp32": "black", "fp16": "#d62728", "fp16_scaled": "#2ca02c", "bf16_pure": "#d62728",
                  "bf16_master": "#1f77b4", "bf16_stochastic": "#ff7f0e", "none": "black", "current": "#1f77b4",
                  "delayed": "#d62728", "block": "#2ca02c"}


@styled
def plot_number_line(fmt: str, *, low: float = 0.0, high: float | None = None, ax=None):
    """The representable values of a format (<= 16 bits) between ``low`` and ``high`` as ticks on a line."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8, 1.8))
    vals = numerics.representable_values(fmt)
    high = float(vals[-1]) if high is None else high
    shown = vals[(vals >= low) & (vals <= high)]
    ax.vlines(shown, 0, 1, lw=0.8)
    ax.set_yticks([])
    ax.set_xlim(low, high)
    ax.set_title(f"{fmt}: {shown.size} representable values in [{low:g}, {high:g}]", fontsize="small")
    return fig


@styled
def plot_losses(curves: Mapping[str, Sequence[float]], *, title: str = "", ax=None):
    """Loss per step for each run (label -> losses)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 3.6))
    for label, losses in curves.items():
        ax.plot(np.arange(1, len(losses) + 1), losses, label=label, color=RECIPE_COLOURS.get(label), lw=1.4)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title(title)
    legend_outside(ax)
    return fig


@styled
def plot_fraction(curves: Mapping[str, Sequence[float]], *, ylabel: str, title: str = "", ax=None):
    """A per-step fraction (zero gradients, lost updates) for each run."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 3.2))
    for label, ys in curves.items():
        ax.plot(np.arange(1, len(ys) + 1), ys, label=label, color=RECIPE_COLOURS.get(label), lw=1.4)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    legend_outside(ax)
    return fig


def _format_label(name: str, bits: float) -> str:
    """'per_tensor_fp8_e4m3', 8 -> 'fp8 e4m3, one scale (8 b)'; 'mxfp4', 4.25 -> 'mxfp4 (4.25 b)'."""
    if name.startswith("per_tensor_"):
        return f"{name.removeprefix('per_tensor_').replace('_', ' ')}, one scale ({bits:g} b)"
    return f"{name.replace('_', ' ')} ({bits:g} b)"


@styled
def plot_block_errors(rows: Sequence[Mapping], *, title: str = "", ax=None):
    """Relative RMS quantization error per format (horizontal bars, log scale), bits per value in the labels;
    blue: one scale for the whole tensor, green: a scale per block."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6.0, 0.8 + 0.32 * len(rows)))
    labels = [_format_label(str(r["format"]), float(r["bits_per_value"])) for r in rows]
    vals = [100 * float(r["rel_rms"]) for r in rows]
    y = np.arange(len(rows))
    ax.barh(y, vals, color=["#1f77b4" if "per_tensor" in str(r["format"]) else "#2ca02c" for r in rows])
    ax.set_yticks(y, labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("relative RMS error (%)")
    ax.set_xscale("log")
    ax.set_title(title)
    return fig
