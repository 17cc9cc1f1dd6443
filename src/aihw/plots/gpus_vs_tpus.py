"""Plots for the chapter "GPUs vs TPUs" (slug ``gpus_vs_tpus``): rooflines of catalogue chips and the reader's
measured device; the systolic array's utilisation over time, access counts per MAC and one cycle of a trace.

Axes in, figure out: every function draws on ``ax`` (a new figure when ``ax`` is None) and returns the figure.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from aihw.catalogue.hardware import Chip, get_chip
from aihw.chips.roofline import (
    OpEstimate,
    attainable_flops,
    min_square_matmul_for_compute_bound,
    ridge_point,
    square_matmul_intensity,
)
from aihw.chips.simt import ACCESS_FIELDS, AccessCounts
from aihw.chips.systolic import SystolicResult, SystolicTrace
from aihw.plots.style import COLUMN_WIDTH_IN, figure_of, legend_outside, plain_log_labels, styled, tidy


@styled
def roofline_curve(peak_flops: float, bandwidth: float, intensities: np.ndarray) -> np.ndarray:
    """Attainable FLOP/s at each intensity (vectorised min(peak, I * bandwidth))."""
    return np.minimum(peak_flops, intensities * bandwidth)


@styled
def plot_roofline(chips: Sequence[str | Chip], dtype: str = "bf16", *, ops: Iterable[OpEstimate] = (),
                  measured=None, measured_dtype: str | None = None, ax=None,
                  intensity_range: tuple[float, float] = (0.05, 1e4)):
    """Draw each chip's roofline for ``dtype``, mark ridge points, place ``ops`` and a measured device.

    ``measured`` is an :class:`aihw.measure.roofline.DeviceMeasurement` (or anything with ``best_bandwidth()``,
    ``best_flops(dtype)`` and ``matmul`` points carrying ``intensity``/``flops_per_s``/``dtype``/``n``).
    Returns the figure. Axes: intensity in FLOP/byte, attainable performance in TFLOP/s, both log scale.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 5))
    x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 400)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, chip in enumerate(chips):
        chip = get_chip(chip) if isinstance(chip, str) else chip
        if dtype not in chip.flops:
            continue
        peak, bw = chip.peak_flops(dtype), chip.bandwidth_bytes_per_s
        colour = colours[i % len(colours)]
        ax.plot(x, roofline_curve(peak, bw, x) / 1e12, color=colour, lw=2,
                label=f"{chip.name} ({peak / 1e12:,.0f} TFLOP/s, {bw / 1e12:.2f} TB/s)")
        ax.plot([ridge_point(peak, bw)], [peak / 1e12], "o", color=colour, ms=5)
    for op in ops:
        ax.plot([op.intensity], [op.attainable_flops / 1e12], "k^", ms=8)
        right = op.intensity > np.sqrt(intensity_range[0] * intensity_range[1]) * 10  # label inside the axes
        ax.annotate(f"{op.name}\n{op.bound}-bound", (op.intensity, op.attainable_flops / 1e12),
                    textcoords="offset points", xytext=(-6, -26) if right else (6, -18), fontsize="small",
                    ha="right" if right else "left")
    if measured is not None:
        _plot_measured(ax, measured, measured_dtype or dtype, x)
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)",
           ylabel="attainable performance (TFLOP/s, dense)", title=f"Roofline, {dtype}")
    ax.grid(True, which="major", alpha=0.3)
    legend_outside(ax, ncols=1)
    if ax.figure.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    return fig


def _plot_measured(ax, measured, dtype: str, x: np.ndarray) -> None:
    points = [p for p in measured.matmul if p.dtype == dtype]
    if not points:
        return
    bw, peak = measured.best_bandwidth(), max(p.flops_per_s for p in points)
    ax.plot(x, roofline_curve(peak, bw, x) / 1e12, "k--", lw=1.5,
            label=f"{measured.label}, measured ({peak / 1e12:.3g} TFLOP/s, {bw / 1e9:.3g} GB/s)")
    ax.plot([p.intensity for p in points], [p.flops_per_s / 1e12 for p in points], "ks", ms=5,
            label=f"this machine: {dtype} matmuls n={','.join(str(p.n) for p in points)}")


@styled
def plot_attainable_vs_size(chip: str | Chip, sizes: Sequence[int], dtypes: Sequence[str] = ("fp32", "bf16", "fp8"),
                            ax=None):
    """Attainable TFLOP/s of n×n×n matmuls as n grows, one line per precision, the compute-bound size marked.

    Absolute throughput on a log axis, not the fraction of peak: as fractions, bf16 and fp8 coincide exactly
    (half the bytes doubles the intensity just as twice the peak doubles the ridge), and one line would hide
    the other.
    """
    chip = get_chip(chip) if isinstance(chip, str) else chip
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4), layout="constrained")
    styles = ("-", "--", ":", "-.")
    for i, dtype in enumerate(d for d in dtypes if d in chip.flops):
        peak, bw = chip.peak_flops(dtype), chip.bandwidth_bytes_per_s
        tflops = [attainable_flops(square_matmul_intensity(n, dtype), peak, bw) / 1e12 for n in sizes]
        (line,) = ax.plot(sizes, tflops, marker="o", linestyle=styles[i % len(styles)], label=dtype)
        knee = min_square_matmul_for_compute_bound(peak, bw, dtype)
        ax.axvline(knee, color=line.get_color(), linestyle=":", alpha=0.7)
        ax.annotate(f"{dtype}: n ≥ {knee:,}", (knee, peak / 1e12), textcoords="offset points", xytext=(4, -14 - 10 * i),
                    fontsize="small", color=line.get_color())
    ax.set(xscale="log", yscale="log", xlabel="matrix size n (n×n×n matmul)",
           ylabel="attainable TFLOP/s (dense)", title=f"{chip.name}: when does a square\nmatmul become compute-bound?")
    ax.grid(True, alpha=0.3)
    legend_outside(ax, ncols=3)
    tidy(fig)
    return fig


class RooflinePlot:
    """A roofline figure that is drawn once and then updated in place (for widgets: ~10x faster than redrawing).

    Axis limits are fixed, so an update only moves lines and markers; ``png()`` renders the current state.
    """

    def __init__(self, *, intensity_range: tuple[float, float] = (0.05, 1e4),
                 tflops_range: tuple[float, float] = (1e-3, 2e4), figsize: tuple[float, float] = (COLUMN_WIDTH_IN, 4.2),
                 dpi: int = 80):
        self.fig, self.ax = plt.subplots(figsize=figsize, dpi=dpi)
        self.x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 60)
        self.ax.set(xscale="log", yscale="log", xlim=intensity_range, ylim=tflops_range,
                    xlabel="arithmetic intensity (FLOP/byte)", ylabel="attainable (TFLOP/s, dense)")
        self.ax.grid(True, which="major", alpha=0.3)
        self.ax.minorticks_off()  # minor log ticks are most of the drawing time
        plain_log_labels(self.fig)  # superscript exponents would be drawn below the minimum text size
        self.fig.subplots_adjust(left=0.11, right=0.97, bottom=0.13, top=0.92)
        self._artists: list = []

    def update(self, chips: Sequence[Chip], dtype: str, ops: Iterable[OpEstimate] = ()) -> None:
        """Replace the drawn chips and operations."""
        for artist in self._artists:
            artist.remove()
        self._artists = []
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, chip in enumerate(chips):
            peak, bw = chip.peak_flops(dtype), chip.bandwidth_bytes_per_s
            colour = colours[i % len(colours)]
            self._artists += self.ax.plot(self.x, roofline_curve(peak, bw, self.x) / 1e12, color=colour, lw=2,
                                          label=f"{chip.name} ({peak / 1e12:,.0f} TFLOP/s, {bw / 1e12:.2f} TB/s)")
            self._artists += self.ax.plot([ridge_point(peak, bw)], [peak / 1e12], "o", color=colour, ms=5)
        for op in ops:
            self._artists += self.ax.plot([op.intensity], [op.attainable_flops / 1e12], "k^", ms=8,
                                          label=f"{op.name}: {op.bound}-bound")
        self._artists.append(self.ax.legend(fontsize="small", loc="lower right"))
        self.ax.set_title(f"Roofline, {dtype}")

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()


_LABELS = {
    "register_file_reads": "register file\nreads",
    "register_file_writes": "register file\nwrites",
    "buffer_reads": "on-chip SRAM\nreads",
    "buffer_writes": "on-chip SRAM\nwrites",
    "offchip_reads": "off-chip\nreads",
    "offchip_writes": "off-chip\nwrites",
    "pe_register_transfers": "PE-to-PE\nlatches",
    "tensor_memory_accesses": "tensor\nmemory",
}


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


@styled
def plot_utilisation(result: SystolicResult, ax: Axes | None = None) -> Figure:
    """Fraction of PEs doing a useful MAC in each cycle, with its mean."""
    ax = _axes(ax, (COLUMN_WIDTH_IN, 3.2))
    cfg = result.config
    ax.plot(np.arange(result.cycles), result.utilisation, lw=1, label="per cycle")
    ax.axhline(result.mean_utilisation, color="C3", ls="--", label=f"mean {result.mean_utilisation:.1%}")
    ax.set_xlabel("cycle")
    ax.set_ylabel("PEs doing a useful MAC")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{cfg.size}x{cfg.size} array, {cfg.dataflow}: C {result.C.shape[0]}x{result.C.shape[1]}")
    legend_outside(ax)
    return figure_of(ax)


@styled
def plot_access_counts(systolic_counts: AccessCounts, simt_counts: AccessCounts,
                       ax: Axes | None = None, *, labels: tuple[str, str] = ("systolic", "SIMT")) -> Figure:
    """Grouped bars of accesses per useful MAC (log scale); a zero is written as "0" above its slot."""
    ax = _axes(ax, (COLUMN_WIDTH_IN, 4.0))
    x = np.arange(len(ACCESS_FIELDS))
    width = 0.38
    rows = [np.array([c.per_mac()[name] for name in ACCESS_FIELDS]) for c in (systolic_counts, simt_counts)]
    positive = np.concatenate(rows)[np.concatenate(rows) > 0]
    low, high = (positive.min() / 4, positive.max() * 4) if positive.size else (1e-3, 10.0)
    for offset, values, label in zip((-width / 2, width / 2), rows, labels, strict=True):
        bars = ax.bar(x + offset, np.where(values > 0, values, np.nan), width, label=label)
        for xi, v in zip(x + offset, values, strict=True):
            ax.annotate("0" if v == 0 else f"{v:.3g}", (xi, v if v > 0 else low), ha="center",
                        va="bottom", fontsize="small", color=bars.patches[0].get_facecolor())
    ax.set_yscale("log")
    ax.set_ylim(low, high)
    ax.set_xticks(x, [_LABELS[name] for name in ACCESS_FIELDS], fontsize="small")
    ax.set_ylabel("element accesses per MAC")
    legend_outside(ax)
    return figure_of(ax)


@styled
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
            ax.text(j, i, text, ha="center", va="center", fontsize="small", family="monospace")
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
    return figure_of(ax)


def _fmt_value(v: complex) -> str:
    """Short text for one register ("." when it holds nothing)."""
    if np.isnan(v):
        return "."
    if np.iscomplexobj(v):
        return f"{v:.2g}"
    x = float(v.real)
    return f"{x:.0f}" if x.is_integer() else f"{x:.3g}"
