"""Plots for the chapter "Inside the accelerator" (slug ``accelerator``): block diagrams of an SM, a TPU core and
the memory hierarchy (drawn from catalogue figures at build time), and the chapter's measurements.

Axes in, figure out: every function draws on ``ax`` (a new figure when ``ax`` is None) and returns the figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from aihw.catalogue.hardware import Chip, get_chip
from aihw.plots.style import bytes_axis, figure_of, styled


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _box(ax: Axes, x: float, y: float, w: float, h: float, text: str, colour: str | tuple[float, ...], *,
         size: str = "small", text_colour: str = "black") -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.01,rounding_size=0.02", fc=colour,
                                ec="black", lw=0.8))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, wrap=True, color=text_colour)


def _blank(ax: Axes, title: str) -> None:
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_axis_off()
    ax.set_title(title, fontsize="medium")


def _kib(chip: Chip, name: str) -> str:
    return f"{chip.anatomy_value(name) / 1024:.0f} KiB" if name in chip.anatomy else "?"


@styled
def draw_sm(chip: str | Chip = "H100 SXM", ax: Axes | None = None) -> Figure:
    """One streaming multiprocessor: four sub-partitions (warp scheduler, register file slice, CUDA cores, a
    tensor core), the shared memory / L1 block, and the L2 and HBM it is fed from."""
    chip = get_chip(chip) if isinstance(chip, str) else chip
    ax = _axes(ax, (6.5, 4.6))
    _blank(ax, f"One SM of the {chip.short_name} (x{chip.anatomy_value('sm_count'):.0f} per chip)"
           if "sm_count" in chip.anatomy else f"One SM of the {chip.short_name}")
    rf = chip.anatomy_value("register_file_per_sm") / 4 / 1024 if "register_file_per_sm" in chip.anatomy else None
    for i in range(4):
        x = 0.03 + i * 0.24
        _box(ax, x, 0.78, 0.22, 0.1, "warp scheduler", "#e8e8e8", size="x-small")
        _box(ax, x, 0.62, 0.22, 0.14, f"register file\n{rf:.0f} KiB" if rf else "register file", "#fdd9a0",
             size="x-small")
        _box(ax, x, 0.47, 0.105, 0.13, "CUDA\ncores", "#c6dbef", size="x-small")
        _box(ax, x + 0.115, 0.47, 0.105, 0.13, "tensor\ncore", "#9ecae1", size="x-small")
    _box(ax, 0.03, 0.3, 0.94, 0.13, f"shared memory / L1 (up to {_kib(chip, 'shared_memory_per_sm')} shared)",
         "#c7e9c0")
    l2 = f"{chip.anatomy_value('l2_cache') / 1e6:.0f} MB" if "l2_cache" in chip.anatomy else ""
    _box(ax, 0.03, 0.15, 0.94, 0.1, f"L2 cache {l2} (shared by all SMs)", "#d9d9d9")
    _box(ax, 0.03, 0.01, 0.94, 0.1, f"HBM {chip.memory.quoted}, {chip.bandwidth_bytes_per_s / 1e12:.2f} TB/s",
         "#bcbddc")
    return figure_of(ax)


@styled
def draw_tpu_core(chip: str | Chip = "TPU v5p", ax: Axes | None = None) -> Figure:
    """One TPU TensorCore: its MXUs (systolic arrays), vector and scalar units, vector memory, and HBM."""
    chip = get_chip(chip) if isinstance(chip, str) else chip
    ax = _axes(ax, (6.5, 4.6))
    mxus = int(chip.anatomy_value("mxus_per_tensorcore")) if "mxus_per_tensorcore" in chip.anatomy else 4
    side = int(chip.anatomy_value("mxu_size")) if "mxu_size" in chip.anatomy else None
    cores = int(chip.anatomy_value("tensorcores_per_chip")) if "tensorcores_per_chip" in chip.anatomy else None
    _blank(ax, f"One TensorCore of the {chip.short_name}" + (f" (x{cores} per chip)" if cores else ""))
    width = 0.94 / mxus
    for i in range(mxus):
        _box(ax, 0.03 + i * width, 0.58, width - 0.02, 0.3,
             f"MXU\n{side}x{side}\nsystolic" if side else "MXU", "#9ecae1", size="x-small")
    _box(ax, 0.03, 0.42, 0.6, 0.12, "vector unit (element-wise, softmax, norms)", "#c6dbef", size="x-small")
    _box(ax, 0.66, 0.42, 0.31, 0.12, "scalar unit\n(issues VLIW bundles)", "#e8e8e8", size="x-small")
    _box(ax, 0.03, 0.24, 0.94, 0.13, "vector memory (on-chip SRAM, managed by the XLA compiler)", "#c7e9c0")
    _box(ax, 0.03, 0.04, 0.94, 0.14, f"HBM {chip.memory.quoted}, {chip.bandwidth_bytes_per_s / 1e12:.2f} TB/s",
         "#bcbddc")
    return figure_of(ax)


@styled
def draw_hierarchy(levels: Sequence[Mapping], ax: Axes | None = None, *, title: str = "") -> Figure:
    """A pyramid of memory levels, fastest and smallest on top: each ``{"name", "size", "note"}``."""
    ax = _axes(ax, (6.5, 4.2))
    _blank(ax, title)
    n = len(levels)
    for i, level in enumerate(levels):
        width = 0.3 + 0.65 * (i + 1) / n
        y = 0.95 - (i + 1) * 0.9 / n
        _box(ax, 0.5 - width / 2, y, width, 0.9 / n - 0.02,
             f"{level['name']}: {level['size']}" + (f"\n{level['note']}" if level.get("note") else ""),
             plt.cm.Blues(0.25 + 0.6 * i / max(n - 1, 1)), size="x-small",
             text_colour="white" if i >= n / 2 else "black")
    return figure_of(ax)


@styled
def plot_bandwidth_sweep(rows: Sequence[Mapping], *, caches: Mapping[str, int] | None = None,
                         plateaus: Sequence[Mapping] = (), ax: Axes | None = None) -> Figure:
    """Read bandwidth (GB/s, median with the samples' spread) against working set, cache sizes marked."""
    ax = _axes(ax, (7, 4))
    size = np.array([r["bytes"] for r in rows], float)
    gbps = np.array([r["gbps"] for r in rows])
    err = np.array([[r["gbps"] - r["low"] for r in rows], [r["high"] - r["gbps"] for r in rows]])
    ax.errorbar(size, gbps, yerr=err, marker="o", capsize=3, label="measured (best sample; bar: min-max)")
    for p in plateaus:
        ax.hlines(p["bandwidth"], p["start"], p["end"], colors="C3", lw=3, alpha=0.5)
    for i, (name, value) in enumerate((caches or {}).items()):
        ax.axvline(value, color="grey", ls="--", lw=1)
        ax.text(value, ax.get_ylim()[1] * (0.95 - 0.07 * i), f" {name}", fontsize="small", color="grey")
    ax.set_xscale("log", base=2)
    bytes_axis(ax.xaxis)
    ax.set_xlabel("working set")
    ax.set_ylabel("read bandwidth (GB/s)")
    ax.legend(fontsize="small", loc="lower left")
    return figure_of(ax)


@styled
def plot_predicted_measured(rows: Sequence[Mapping], *, label: str = "variant", ax: Axes | None = None) -> Figure:
    """Bars of predicted vs measured seconds (measured with its spread) for rows with ``label``,
    ``predicted_s``, ``measured_s``, ``low``, ``high``."""
    ax = _axes(ax, (6.5, 3.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["predicted_s"] * 1e3 for r in rows], 0.4, label="predicted (bytes / bandwidth)")
    measured = np.array([r["measured_s"] for r in rows]) * 1e3
    err = np.array([[r["measured_s"] - r["low"] for r in rows], [r["high"] - r["measured_s"] for r in rows]]) * 1e3
    ax.bar(x + 0.2, measured, 0.4, yerr=err, capsize=3, label="measured (median, min-max)")
    ax.set_xticks(x, [r[label] for r in rows])
    ax.set_ylabel("time per call (ms)")
    ax.legend(fontsize="small")
    return figure_of(ax)


@styled
def plot_attention(rows: Sequence[Mapping], axes: Sequence[Axes] | None = None) -> Figure:
    """Left: forward+backward time against sequence length per kind; right: bytes saved for backward."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind]
        seq = [r["seq"] for r in mine]
        med = np.array([r["seconds"] for r in mine]) * 1e3
        err = np.array([[r["seconds"] - r["low"] for r in mine], [r["high"] - r["seconds"] for r in mine]]) * 1e3
        axes[0].errorbar(seq, med, yerr=err, marker="o", capsize=3, label=kind)
        axes[1].plot(seq, [r["saved_bytes"] / 1e6 for r in mine], marker="o", label=f"{kind} (measured)")
    axes[0].set(xscale="log", yscale="log", xlabel="sequence length", ylabel="forward + backward (ms)")
    axes[1].set(xscale="log", yscale="log", xlabel="sequence length", ylabel="saved for backward (MB)")
    for ax in axes:
        ax.legend(fontsize="small")
    return figure_of(axes[0])


@styled
def plot_energy(bands: Mapping[str, Mapping[str, float]], *, on_chip: Mapping[str, float] | None = None,
                ax: Axes | None = None) -> Figure:
    """pJ per MAC per design: the central estimate with the low-high band as an error bar; optional on-chip part."""
    ax = _axes(ax, (7, 3.6))
    names = list(bands)
    x = np.arange(len(names))
    central = np.array([bands[n]["central"] for n in names])
    err = np.array([[bands[n]["central"] - bands[n]["low"] for n in names],
                    [bands[n]["high"] - bands[n]["central"] for n in names]])
    ax.bar(x, central, 0.6, yerr=err, capsize=4, color="C0", label="total (band: low-high prices)")
    if on_chip is not None:
        ax.bar(x, [on_chip[n] for n in names], 0.3, color="C1", label="on chip (central)")
    ax.set_xticks(x, [n.replace(" (", "\n(") for n in names], fontsize="small")
    ax.set_ylabel("energy per MAC (pJ, 45 nm)")
    ax.legend(fontsize="small")
    return figure_of(ax)


@styled
def plot_profile(class_seconds: Mapping[str, float], ax: Axes | None = None) -> Figure:
    """Horizontal bars: share of the step's operator self time per class."""
    ax = _axes(ax, (6.5, 3))
    total = sum(class_seconds.values()) or 1.0
    items = sorted(class_seconds.items(), key=lambda kv: kv[1])
    ax.barh([k for k, _ in items], [100 * v / total for _, v in items], color="C2")
    ax.set_xlabel("share of operator self time (%)")
    return figure_of(ax)


@styled
def plot_utilisation_sweep(curves: Mapping[str, Sequence[Mapping]], ax: Axes | None = None) -> Figure:
    """Mean utilisation against square matrix size, one line per array mode."""
    ax = _axes(ax, (6.5, 3.6))
    for label, rows in curves.items():
        ax.plot([r["n"] for r in rows], [100 * r["utilisation"] for r in rows], marker="o", label=label)
    ax.set(xscale="log", xlabel="matrix size n (n x n x n)", ylabel="mean utilisation (%)", ylim=(0, 105))
    ax.legend(fontsize="small")
    return figure_of(ax)


@styled
def plot_latency(by_size: Sequence[Mapping], by_stride: Sequence[Mapping], *,
                 caches: Mapping[str, int] | None = None, axes: Sequence[Axes] | None = None) -> Figure:
    """Left: ns per dependent load against working set (random chain); right: against stride (one working set)."""
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    for ax, rows, key, label in ((axes[0], by_size, "working_set", "working set"),
                                 (axes[1], by_stride, "stride", "stride")):
        x = [r[key] for r in rows]
        best = np.array([r["ns"] for r in rows])
        ax.errorbar(x, best, yerr=[np.zeros_like(best), np.array([r["high"] for r in rows]) - best], marker="o",
                    capsize=3, label="best of 3 (bar: worst)")
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="ns per dependent load")
        ax.set_xscale("log", base=2)
        bytes_axis(ax.xaxis, max_ticks=4)
    for name, value in (caches or {}).items():
        axes[0].axvline(value, color="grey", ls="--", lw=1)
        axes[0].text(value, best.max(), f" {name}", fontsize="small", color="grey", va="top")
    axes[1].axvline(64, color="grey", ls=":", lw=1)
    axes[1].text(64, axes[1].get_ylim()[1], " cache line", fontsize="small", color="grey", va="top")
    axes[0].legend(fontsize="small")
    return figure_of(axes[0])
