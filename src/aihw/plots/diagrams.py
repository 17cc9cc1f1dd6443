"""Diagrams drawn by code (matplotlib, offline, at build time): a GPU streaming multiprocessor, a TPU chip, the
systolic dataflow, an 8-GPU NVSwitch node beside a TPU torus, and an animation of the systolic simulator.

Reusable: every ``draw_*`` function takes ``ax=None`` (a new figure at the book's column width when None),
keyword-only knobs for the numbers it prints, and returns the figure. The numbers default to published values
(sources beside each default) and are parameters, so another chapter can draw another generation.
"""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from aihw.plots.style import COLUMN_WIDTH_IN, PALETTE, book_style, styled

BLUE, ORANGE, GREEN, PINK, YELLOW, SKY = PALETTE[:6]
GREY = "#d9d9d9"


def _canvas(ax, size: tuple[float, float], xlim: tuple[float, float], ylim: tuple[float, float]):
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


def _box(ax, x, y, w, h, text="", *, colour=GREY, text_colour="black", size="small", alpha=1.0, lw=1.0,
         weight="normal"):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.08", facecolor=colour,
                                edgecolor="black", lw=lw, alpha=alpha))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=text_colour,
                weight=weight)


def _arrow(ax, start, end, *, colour="black", lw=1.5, style="-|>", both=False):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="<|-|>" if both else style, mutation_scale=12,
                                 color=colour, lw=lw, shrinkA=0, shrinkB=0))


@styled
def draw_gpu_sm(ax=None, *, name: str = "H100 SM", partitions: int = 4, fp32_per_partition: int = 32,
                int32_per_partition: int = 16, fp64_per_partition: int = 16, register_kib_per_partition: int = 64,
                shared_kib: int = 256):
    """One streaming multiprocessor: ``partitions`` processing blocks, each with its warp scheduler, register
    file, CUDA cores and a Tensor Core, above the SM's shared L1 / shared memory.

    Defaults: NVIDIA H100 (Hopper) SM, NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): 4 partitions,
    each 32 FP32, 16 INT32, 16 FP64 lanes, one 4th-generation Tensor Core and a 64 KB register file (16,384
    32-bit registers); 256 KB of combined L1 data cache / shared memory per SM.
    """
    ax = _canvas(ax, (COLUMN_WIDTH_IN, 4.6), (0, 12), (0, 9.2))
    _box(ax, 0.1, 0.1, 11.8, 9.0, colour="#f4f4f4")
    ax.text(6, 8.75, f"{name}: one streaming multiprocessor", ha="center", va="center", weight="bold")
    width = 11.4 / partitions
    for p in range(partitions):
        x = 0.3 + p * width
        _box(ax, x, 2.4, width - 0.2, 5.9, colour="white")
        _box(ax, x + 0.1, 7.3, width - 0.4, 0.8, "warp\nscheduler", colour=SKY, size="small")
        _box(ax, x + 0.1, 6.0, width - 0.4, 1.1, f"registers\n{register_kib_per_partition} KB", colour=YELLOW)
        _box(ax, x + 0.1, 4.3, width - 0.4, 1.5, f"{fp32_per_partition} FP32\n{int32_per_partition} INT32\n"
             f"{fp64_per_partition} FP64", colour="#cfe3f3")
        _box(ax, x + 0.1, 2.6, width - 0.4, 1.5, "Tensor\nCore", colour=GREEN, text_colour="white",
             weight="bold")
    _box(ax, 0.3, 0.4, 11.4, 1.6, f"L1 data cache / shared memory: {shared_kib} KB, shared by all "
         f"{partitions} blocks", colour=ORANGE, text_colour="white")
    for p in range(partitions):
        x = 0.3 + p * width + (width - 0.2) / 2
        _arrow(ax, (x, 2.0), (x, 2.4), both=True)
    return ax.figure


@styled
def draw_tpu_chip(ax=None, *, name: str = "TPU v4", cores: int = 2, mxus_per_core: int = 4, mxu_size: int = 128,
                  hbm: str = "32 GiB HBM2", ici_links: int = 6):
    """A TPU chip: ``cores`` TensorCores, each with ``mxus_per_core`` systolic matrix units (MXUs) of
    ``mxu_size``² multiply-accumulators, a vector unit, a scalar unit and vector memory; HBM beside the die and
    inter-chip interconnect (ICI) links at its edge. SparseCores (v4, v5p) are left out.

    Defaults: TPU v4, Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer ...", ISCA 2023,
    arXiv:2304.01433 (2 TensorCores per chip, 4 MXUs of 128×128 each, 32 GiB HBM2, 6 ICI links in a 3D torus).
    """
    ax = _canvas(ax, (COLUMN_WIDTH_IN, 4.4), (0, 12), (0, 8.8))
    ax.text(6, 8.5, f"{name} chip (simplified)", ha="center", va="center", weight="bold")
    _box(ax, 1.6, 0.6, 8.8, 7.4, colour="#f4f4f4")
    height = 7.0 / cores
    for c in range(cores):
        y = 0.8 + c * height
        _box(ax, 1.8, y, 8.4, height - 0.2, colour="white")
        ax.text(2.0, y + height - 0.45, f"TensorCore {c}", ha="left", va="center", weight="bold")
        mxu_w = 5.0 / mxus_per_core
        for m in range(mxus_per_core):
            _box(ax, 2.0 + m * mxu_w, y + 0.25, mxu_w - 0.15, height - 1.1,
                 f"MXU\n{mxu_size}\n×{mxu_size}", colour=GREEN, text_colour="white")
        _box(ax, 7.1, y + 0.25, 1.45, height - 1.1, "vector\nunit", colour="#cfe3f3")
        _box(ax, 8.65, y + 0.25, 1.4, (height - 1.1) / 2 - 0.05, "scalar", colour=SKY)
        _box(ax, 8.65, y + 0.25 + (height - 1.1) / 2 + 0.05, 1.4, (height - 1.1) / 2 - 0.05, "VMEM",
             colour=YELLOW)
    _box(ax, 10.6, 1.0, 1.3, 6.6, hbm.replace(" ", "\n"), colour=ORANGE, text_colour="white")
    _arrow(ax, (10.4, 4.3), (10.6, 4.3), both=True)
    _box(ax, 0.1, 1.0, 1.3, 6.6, f"ICI\n{ici_links}\nlinks", colour=PINK, text_colour="white")
    _arrow(ax, (1.4, 4.3), (1.6, 4.3), both=True)
    return ax.figure


@styled
def draw_systolic_dataflow(ax=None, *, size: int = 4):
    """Weight-stationary dataflow on a ``size``×``size`` array: weights wait in the PEs, activations enter from
    the left one cycle apart (skewed) and move right, partial sums move down into the accumulators."""
    ax = _canvas(ax, (COLUMN_WIDTH_IN, 4.9), (-3.4, size + 1.0), (-2.2, size + 1.0))
    for i in range(size):
        for j in range(size):
            y = size - 1 - i
            _box(ax, j + 0.1, y + 0.1, 0.8, 0.8, f"w{i}{j}", colour=GREEN, text_colour="white")
            if j < size - 1:
                _arrow(ax, (j + 0.9, y + 0.5), (j + 1.1, y + 0.5), colour=BLUE)
            if i < size - 1:
                _arrow(ax, (j + 0.5, y + 0.1), (j + 0.5, y - 0.1), colour=ORANGE)
        # skewed activations waiting to enter row i: row i starts i cycles later
        for t in range(2):
            ax.text(-0.7 - 0.8 * t - 0.4 * i, size - 0.5 - i, f"a{t},{i}", ha="center", va="center",
                    fontsize="small", color=BLUE)
        _arrow(ax, (-0.25, size - 0.5 - i), (0.1, size - 0.5 - i), colour=BLUE)
    for j in range(size):
        _arrow(ax, (j + 0.5, 0.1), (j + 0.5, -0.45), colour=ORANGE)
        _box(ax, j + 0.1, -1.05, 0.8, 0.55, f"acc{j}", colour=ORANGE, text_colour="white", size="small")
    ax.text(size / 2, size + 0.55, "weights loaded once, then stationary", ha="center", color=GREEN)
    ax.text(-1.9, size + 0.55, "activations →\n(one cycle skew\nper row)", ha="center", va="center", color=BLUE,
            fontsize="small")
    ax.text(size / 2, -1.75, "partial sums ↓ into accumulators: C = A · W", ha="center", color=ORANGE)
    return ax.figure


@styled
def draw_nvswitch_node(ax=None, *, gpus: int = 8, switches: int = 4, gpu_name: str = "H100",
                       link_text: str = "18 NVLink 4 links per GPU, 900 GB/s bidirectional"):
    """An 8-GPU node: every GPU links to every NVSwitch chip, so any pair talks at full NVLink bandwidth
    (one hop through a switch). Defaults: NVIDIA DGX H100 (4 NVSwitch chips, 18 NVLink 4 links per GPU,
    900 GB/s bidirectional per GPU; NVIDIA DGX H100 user guide and H100 datasheet)."""
    ax = _canvas(ax, (COLUMN_WIDTH_IN / 2, 3.6), (-0.3, 8.3), (-0.6, 7.8))
    ax.set_title(f"{gpus}-GPU node, {switches} NVSwitch chips", fontsize="medium")
    gx = np.linspace(0, 7.2, gpus)
    sx = np.linspace(1.2, 6.0, switches)
    for x in gx:
        for s in sx:
            ax.plot([x + 0.4, s + 0.5], [1.0, 4.6], color=BLUE, lw=0.8, alpha=0.6)
        _box(ax, x, 0.2, 0.8, 0.8, "", colour=GREEN)
    for i, x in enumerate(gx):
        ax.text(x + 0.4, 0.6, str(i), ha="center", va="center", color="white", weight="bold")
    for s in sx:
        _box(ax, s, 4.6, 1.0, 0.8, "", colour=BLUE)
    ax.text(4.0, 5.85, "NVSwitch", ha="center", color=BLUE)
    ax.text(4.0, -0.35, f"{gpu_name} GPUs", ha="center", va="center")
    ax.text(4.0, 6.9, link_text.replace(", ", ",\n"), ha="center", va="center", fontsize="small")
    return ax.figure


@styled
def draw_tpu_torus(ax=None, *, side: int = 4, name: str = "TPU v4 / v5p",
                   note: str = "one 4×4 face of a 3D torus"):
    """A ``side``×``side`` torus of TPU chips: each chip links only to its neighbours, and wrap-around links
    close every row and column (a 3D torus repeats this along a third axis: 6 links per chip)."""
    ax = _canvas(ax, (COLUMN_WIDTH_IN / 2, 3.6), (-0.7, side + 0.5), (-1.5, side + 0.5))
    ax.set_title(f"{name} torus", fontsize="medium")
    for i in range(side):
        for j in range(side):
            if j < side - 1:
                ax.plot([j + 0.4, j + 1.0], [i + 0.4, i + 0.4], color=PINK, lw=2)
            if i < side - 1:
                ax.plot([j + 0.4, j + 0.4], [i + 0.4, i + 1.0], color=PINK, lw=2)
            ax.add_patch(Rectangle((j, i), 0.8, 0.8, facecolor=GREEN, edgecolor="black"))
    for k in range(side):  # wrap-around links: dashed stubs leaving each edge (they join the opposite edge)
        c = k + 0.4
        for xs, ys in (([c, c], [side - 0.2, side + 0.25]), ([c, c], [0.0, -0.45]),
                       ([side - 0.2, side + 0.25], [c, c]), ([0.0, -0.45], [c, c])):
            ax.plot(xs, ys, color=PINK, lw=2, ls=(0, (2, 1.5)))
    ax.text(side / 2 - 0.1, -0.95, f"{note};\ndashed: wrap-around to the opposite edge", ha="center",
            va="center", fontsize="small")
    return ax.figure


@styled
def draw_node_vs_torus(**kwargs):
    """The two network shapes side by side: an 8-GPU NVSwitch node (switched, all-to-all) and a TPU torus
    (direct links to neighbours). ``kwargs`` go to :func:`draw_nvswitch_node`."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(COLUMN_WIDTH_IN, 3.8), layout="constrained")
    draw_nvswitch_node(left, **kwargs)
    draw_tpu_torus(right)
    return fig


def systolic_animation(trace, *, cycles: int | None = None, dpi: int = 100, interval_ms: int = 700):
    """A matplotlib animation of a :class:`aihw.chips.systolic.SystolicTrace`, one frame per cycle (the PE grid with
    its registers, firing PEs shaded). ``anim.to_jshtml()`` gives self-contained HTML (works offline);
    ``anim.save(path, writer="pillow")`` a GIF. ``cycles`` limits the frames to the first ones."""
    from matplotlib.animation import FuncAnimation

    from aihw.plots.gpus_vs_tpus import plot_trace_step

    frames = min(trace.cycles, cycles or trace.cycles)
    size = trace.config.size
    with book_style():
        fig, ax = plt.subplots(figsize=(0.85 * size + 1.6, 0.85 * size + 1.3), dpi=dpi, layout="constrained")

        def draw(cycle):
            ax.clear()
            plot_trace_step(trace, cycle, ax=ax)
            return []

        anim = FuncAnimation(fig, draw, frames=frames, interval=interval_ms, blit=False)
    plt.close(fig)
    return anim


_PLAYER_ICONS = {"fa-minus": "\u2212", "fa-plus": "+", "fa-fast-backward": "\u23ee", "fa-step-backward": "\u23f4\u2758",
                 "fa-play fa-flip-horizontal": "\u25c0", "fa-pause": "\u23f8", "fa-play": "\u25b6",
                 "fa-step-forward": "\u2758\u23f5", "fa-fast-forward": "\u23ed"}


def systolic_animation_html(trace, *, cycles: int | None = None, dpi: int = 100, **kwargs) -> str:
    """:func:`systolic_animation` as self-contained HTML (frames embedded as PNG at ``dpi``; play controls in
    JavaScript, nothing fetched): a 3×3 array over a dozen cycles is about 300 kB."""
    import matplotlib as mpl

    anim = systolic_animation(trace, cycles=cycles, dpi=dpi, **kwargs)
    with mpl.rc_context({"savefig.dpi": dpi}):  # frames at the figure's dpi, whatever the session's savefig.dpi
        html = anim.to_jshtml(default_mode="once")
    # matplotlib's player links Font Awesome from a CDN for its button icons: the book is offline, so drop the
    # link and draw the buttons with plain characters.
    html = re.sub(r"<link[^>]*font-awesome[^>]*>", "", html, flags=re.S)
    for icon, char in _PLAYER_ICONS.items():
        html = html.replace(f'<i class="fa {icon}"></i>', char)
    return f'<div class="animation">{html}</div>'


__all__ = ["draw_gpu_sm", "draw_tpu_chip", "draw_systolic_dataflow", "draw_nvswitch_node", "draw_tpu_torus",
           "draw_node_vs_torus", "systolic_animation",
           "systolic_animation_html"]
