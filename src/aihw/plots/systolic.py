"""Plots for the systolic-array chapter: utilisation over time, access counts per MAC, one cycle of a trace.

Axes in, figure out: every function draws on ``ax`` (a new figure when ``ax`` is None) and returns the figure.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from aihw.simt import ACCESS_FIELDS, AccessCounts
from aihw.systolic import SystolicResult, SystolicTrace

_LABELS = {
    "register_file_reads": "register file\nreads",
    "register_file_writes": "register file\nwrites",
    "buffer_reads": "on-chip SRAM\nreads",
    "buffer_writes": "on-chip SRAM\nwrites",
    "offchip_reads": "off-chip\nreads",
    "offchip_writes": "off-chip\nwrites",
    "pe_register_transfers": "PE-to-PE\nlatches",
}


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def plot_utilisation(result: SystolicResult, ax: Axes | None = None) -> Figure:
    """Fraction of PEs doing a useful MAC in each cycle, with its mean."""
    ax = _axes(ax, (7, 3))
    cfg = result.config
    ax.plot(np.arange(result.cycles), result.utilisation, lw=1, label="per cycle")
    ax.axhline(result.mean_utilisation, color="C3", ls="--", label=f"mean {result.mean_utilisation:.1%}")
    ax.set_xlabel("cycle")
    ax.set_ylabel("PEs doing a useful MAC")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{cfg.size}x{cfg.size} array, {cfg.dataflow}: C {result.C.shape[0]}x{result.C.shape[1]}")
    ax.legend(loc="upper right", fontsize="small")
    return ax.figure


def plot_access_counts(systolic_counts: AccessCounts, simt_counts: AccessCounts,
                       ax: Axes | None = None, *, labels: tuple[str, str] = ("systolic", "SIMT")) -> Figure:
    """Grouped bars of accesses per useful MAC (log scale); a zero is written as "0" above its slot."""
    ax = _axes(ax, (9, 3.5))
    x = np.arange(len(ACCESS_FIELDS))
    width = 0.38
    rows = [np.array([c.per_mac()[name] for name in ACCESS_FIELDS]) for c in (systolic_counts, simt_counts)]
    positive = np.concatenate(rows)[np.concatenate(rows) > 0]
    low, high = (positive.min() / 4, positive.max() * 4) if positive.size else (1e-3, 10.0)
    for offset, values, label in zip((-width / 2, width / 2), rows, labels, strict=True):
        bars = ax.bar(x + offset, np.where(values > 0, values, np.nan), width, label=label)
        for xi, v in zip(x + offset, values, strict=True):
            ax.annotate("0" if v == 0 else f"{v:.3g}", (xi, v if v > 0 else low), ha="center",
                        va="bottom", fontsize="x-small", color=bars.patches[0].get_facecolor())
    ax.set_yscale("log")
    ax.set_ylim(low, high)
    ax.set_xticks(x, [_LABELS[name] for name in ACCESS_FIELDS], fontsize="small")
    ax.set_ylabel("element accesses per MAC")
    ax.legend(fontsize="small")
    return ax.figure


def plot_trace_step(trace: SystolicTrace, cycle: int, ax: Axes | None = None) -> Figure:
    """The PE grid at one cycle: firing PEs shaded, each cell showing its a, b and partial-sum registers."""
    if not 0 <= cycle < trace.cycles:
        raise ValueError(f"cycle must be in [0, {trace.cycles - 1}], got {cycle!r}")
    size = trace.config.size
    ax = _axes(ax, (1.1 * size + 1, 1.1 * size + 1))
    ax.imshow(trace.fire[cycle], cmap="Greens", vmin=0, vmax=1.6, extent=(-0.5, size - 0.5, size - 0.5, -0.5))
    for i in range(size):
        for j in range(size):
            text = (f"a {_fmt_value(trace.a[cycle, i, j])}\nb {_fmt_value(trace.b[cycle, i, j])}\n"
                    f"p {_fmt_value(trace.psum[cycle, i, j])}")
            ax.text(j, i, text, ha="center", va="center", fontsize=7, family="monospace")
    ax.set_xticks(np.arange(size))
    ax.set_yticks(np.arange(size))
    ax.set_xticks(np.arange(size + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(size + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.6", lw=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("PE column")
    ax.set_ylabel("PE row")
    fired = int(trace.fire[cycle].sum())
    ax.set_title(f"cycle {cycle} ({trace.phase[cycle]}, tile at {tuple(int(v) for v in trace.tile[cycle])}): "
                 f"{fired}/{size * size} PEs fire", fontsize="small")
    return ax.figure


def _fmt_value(v: complex) -> str:
    """Short text for one register ("." when it holds nothing)."""
    if np.isnan(v):
        return "."
    if np.iscomplexobj(v):
        return f"{v:.2g}"
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.3g}"
