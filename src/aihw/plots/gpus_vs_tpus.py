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
from aihw.plots.style import (
    BASE_FONT_PT,
    COLUMN_WIDTH_IN,
    book_style,
    figure_of,
    legend_outside,
    place_labels,
    plain_log_labels,
    styled,
    tidy,
)


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
    missing = []
    for i, chip in enumerate(chips):
        chip = get_chip(chip) if isinstance(chip, str) else chip
        if dtype not in chip.flops:
            missing.append(chip.name)
            continue
        peak, bw = chip.peak_flops(dtype), chip.bandwidth_bytes_per_s
        colour = colours[i % len(colours)]
        ax.plot(x, roofline_curve(peak, bw, x) / 1e12, color=colour, lw=2,
                label=f"{chip.name} ({peak / 1e12:,.0f} TFLOP/s, {bw / 1e12:.2f} TB/s)")
        ax.plot([ridge_point(peak, bw)], [peak / 1e12], "o", color=colour, ms=5)
    ops = list(ops)
    for op in ops:
        ax.plot([op.intensity], [op.attainable_flops / 1e12], "k^", ms=8)
    if measured is not None:
        _plot_measured(ax, measured, measured_dtype or dtype, x)
    for name in missing:  # say so in the legend rather than leave a named chip silently undrawn
        ax.plot([], [], " ", label=f"{name}: no {dtype} peak in the catalogue, not drawn")
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)",
           ylabel="attainable performance (TFLOP/s, dense)", title=f"Roofline, {dtype}")
    ax.grid(True, which="major", alpha=0.3)
    legend_outside(ax, ncols=1)
    if ax.figure.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    if ops:  # on a white ground, off each other and the axes' edges: the roofs run under every label
        place_labels(ax, [op.intensity for op in ops], [op.attainable_flops / 1e12 for op in ops],
                     [f"{op.name}\n{op.bound}-bound" for op in ops],
                     offsets=((6, -8, "left", "top"), (-6, -8, "right", "top"), (6, 6, "left", "bottom"),
                              (-6, 6, "right", "bottom")),
                     bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
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
                 tflops_range: tuple[float, float] = (1e-3, 2e4), figsize: tuple[float, float] = (COLUMN_WIDTH_IN, 5.0),
                 dpi: int = 80):
        with book_style():  # the book's fonts (the legend at the minimum size, not matplotlib's smaller default)
            self.fig, self.ax = plt.subplots(figsize=figsize, dpi=dpi, layout="constrained")
            self.x = np.logspace(np.log10(intensity_range[0]), np.log10(intensity_range[1]), 60)
            self.ax.set(xscale="log", yscale="log", xlim=intensity_range, ylim=tflops_range,
                        xlabel="arithmetic intensity (FLOP/byte)", ylabel="attainable (TFLOP/s, dense)")
            self.ax.grid(True, which="major", alpha=0.3)
            self.ax.minorticks_off()  # minor log ticks are most of the drawing time
        plain_log_labels(self.fig)  # superscript exponents would be drawn below the minimum text size
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
        with book_style():
            legend = legend_outside(self.ax, ncols=1)
        if legend is not None:
            self._artists.append(legend)
        self.ax.set_title(f"Roofline, {dtype}", fontsize=BASE_FONT_PT)

    def png(self, dpi: int = 192) -> bytes:
        """The figure as PNG at ``dpi`` (192: twice the 96 CSS px per inch it is shown at, sharp on a phone)."""
        buffer = io.BytesIO()
        self.fig.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
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
    """Paired horizontal bars of accesses per useful MAC (log scale), one row per kind of access, the value
    written at the end of each bar; a zero is written as "0" at the left edge of its slot."""
    ax = _axes(ax, (COLUMN_WIDTH_IN, 4.6))
    y = np.arange(len(ACCESS_FIELDS))
    height = 0.4
    rows = [np.array([c.per_mac()[name] for name in ACCESS_FIELDS]) for c in (systolic_counts, simt_counts)]
    positive = np.concatenate(rows)[np.concatenate(rows) > 0]
    low, high = (positive.min() / 4, positive.max() * 40) if positive.size else (1e-3, 10.0)
    for offset, values, label in zip((-height / 2, height / 2), rows, labels, strict=True):
        bars = ax.barh(y + offset, np.where(values > 0, values, np.nan), height, label=label)
        colour = bars.patches[0].get_facecolor()
        for yi, v in zip(y + offset, values, strict=True):
            ax.annotate("0" if v == 0 else f"{v:.3g}", (v if v > 0 else low, yi), xytext=(3, 0),
                        textcoords="offset points", ha="left", va="center", fontsize="small", color=colour)
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.set_yticks(y, [_LABELS[name].replace("\n", " ") for name in ACCESS_FIELDS], fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("element accesses per MAC")
    legend_outside(ax, ncols=2)
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
