"""Plots of the data-parallel chapter: all-reduce time and bus bandwidth vs size, loss curves per rank,
compute vs communication per step, cluster extrapolation, and sharded memory. Each takes ``ax=None`` and
returns the figure. Sizes in bytes (KiB/MiB on the axis), bandwidth in GB/s (1e9 bytes/s)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from aihw.comm.collectives import ClusterEstimate, LinkModel, all_reduce_time
from aihw.plots.style import COLUMN_WIDTH_IN, legend_outside, styled, tidy


def _axes(ax, figsize=(COLUMN_WIDTH_IN, 4.2)):
    return (ax.figure, ax) if ax is not None else plt.subplots(figsize=figsize, layout="constrained")


def _size_axis(ax) -> None:
    ticks = [2**k for k in range(10, 31, 2)]
    labels = [f"{t // 2**20} MiB" if t >= 2**20 else f"{t // 2**10} KiB" for t in ticks]
    lo, hi = ax.get_xlim()
    keep = [(t, lab) for t, lab in zip(ticks, labels, strict=True) if lo <= t <= hi]
    ax.set_xticks([t for t, _ in keep], [lab for _, lab in keep], fontsize="small")
    ax.minorticks_off()


def _by_algorithm(rows: Sequence[Mapping]) -> dict[str, list[Mapping]]:
    groups: dict[str, list[Mapping]] = {}
    for row in sorted(rows, key=lambda r: r["size_bytes"]):
        groups.setdefault(row["algorithm"], []).append(row)
    return groups


@styled
def plot_time_vs_size(rows: Sequence[Mapping], *, fits: Mapping[str, LinkModel] | None = None, ax=None):
    """Measured all-reduce time per algorithm (markers) and, for each fitted link, the model (dashed)."""
    fig, ax = _axes(ax)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, group) in enumerate(_by_algorithm(rows).items()):
        colour = colours[i % len(colours)]
        sizes = np.array([r["size_bytes"] for r in group], dtype=float)
        ax.plot(sizes, [r["time_s"] * 1e6 for r in group], "o-", color=colour, lw=1, ms=4, label=name)
        if fits and name in fits:
            model = "ring" if name == "builtin" else name
            grid = np.logspace(np.log10(sizes.min()), np.log10(sizes.max()), 50)
            link = fits[name]
            ax.plot(grid, [all_reduce_time(s, group[0]["world_size"], link=link, algorithm=model) * 1e6
                           for s in grid], "--", color=colour, lw=1,
                    label=f"{name} model: α={link.alpha_s * 1e6:.0f} µs, B={link.bandwidth_bytes_per_s / 1e9:.2f} GB/s")
    world = rows[0]["world_size"] if rows else "?"
    ax.set(xscale="log", yscale="log", xlabel="message size (bytes per rank)", ylabel="time per all-reduce (µs)",
           title=f"All-reduce on {world} ranks: measured (solid) and fitted model (dashed)")
    _size_axis(ax)
    ax.grid(True, which="both", alpha=0.25)
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_bus_bandwidth(rows: Sequence[Mapping], ax=None):
    """Bus bandwidth (nccl-tests definition) against message size, per algorithm."""
    fig, ax = _axes(ax)
    for name, group in _by_algorithm(rows).items():
        ax.plot([r["size_bytes"] for r in group], [r["busbw"] / 1e9 for r in group], "o-", ms=4, label=name)
    ax.set(xscale="log", xlabel="message size (bytes per rank)", ylabel="bus bandwidth (GB/s)",
           title="Bus bandwidth: algbw × 2(p−1)/p")
    _size_axis(ax)
    ax.grid(True, alpha=0.25)
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_loss_curves(per_rank: Sequence[Mapping], *, reference: Mapping | None = None, ax=None):
    """Each rank's loss on its own slice (thin), their mean (thick) and the single-process run (dashed)."""
    fig, ax = _axes(ax)
    for r in per_rank:
        ax.plot(r["losses"], lw=1, alpha=0.7, label=f"rank {r['rank']} (its own slice)")
    mean = np.mean([r["losses"] for r in per_rank], axis=0)
    ax.plot(mean, color="black", lw=2.5, label="mean over ranks = global-batch loss")
    if reference is not None:
        ax.plot(reference["losses"], "--", color="tab:red", lw=1.5, label="single process, global batch")
    mode = per_rank[0].get("mode", "") if per_rank else ""
    ax.set(xlabel="step", ylabel="cross-entropy loss", title=f"Data-parallel training ({mode}, {len(per_rank)} ranks)")
    ax.grid(True, alpha=0.25)
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_step_breakdown(rows: Sequence[Mapping], ax=None):
    """Stacked bars per row (``label``, ``compute_s``, ``comm_s``): compute vs exposed communication per step."""
    fig, ax = _axes(ax)
    labels = [r["label"] for r in rows]
    compute = np.array([r["compute_s"] for r in rows]) * 1e3
    comm = np.array([r["comm_s"] for r in rows]) * 1e3
    ax.bar(labels, compute, label="forward + backward")
    ax.bar(labels, comm, bottom=compute, label="waiting for the gradient all-reduce")
    for i, row in enumerate(rows):
        if "efficiency" in row:
            ax.annotate(f"eff. {row['efficiency']:.0%}", (i, compute[i] + comm[i]), ha="center",
                        textcoords="offset points", xytext=(0, 3), fontsize="small")
    ax.set(ylabel="median time per step (ms)", title="Where a step's time goes")
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_cluster_estimates(estimates: Sequence[ClusterEstimate], *, title: str = "", ax=None):
    """Horizontal bars: predicted all-reduce time of each cluster layout."""
    fig, ax = _axes(ax, figsize=(COLUMN_WIDTH_IN, 0.6 * len(estimates) + 1.5))
    y = np.arange(len(estimates))
    times = [e.time_s * 1e3 for e in estimates]
    ax.barh(y, times, color="tab:blue")
    for i, e in enumerate(estimates):
        ax.annotate(f"{e.time_s * 1e3:,.0f} ms", (times[i], i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize="small")
    ax.set_yticks(y, [f"{e.label}\n({e.link})" for e in estimates], fontsize="small")
    ax.invert_yaxis()
    title = "\n".join(textwrap.wrap(title or "Gradient all-reduce, alpha-beta model", 40))
    ax.set(xlabel="predicted all-reduce time (ms)", title=title,
           xlim=(0, max(times) * 1.25 if times else 1))
    tidy(fig)
    return fig


@styled
def plot_memory_comparison(rows: Sequence[Mapping], ax=None):
    """Paired horizontal bars per (method, component): measured bytes on rank 0 vs the estimator's prediction
    (kB), one row per pair (horizontal, so each label has a row of its own instead of running into the next)."""
    rank0 = [r for r in rows if r["rank"] == 0]
    fig, ax = _axes(ax, figsize=(COLUMN_WIDTH_IN, 1.6 + 0.34 * len(rank0)))
    labels = [f"{r['method']}: {r['component']}" for r in rank0]
    y = np.arange(len(rank0))
    ax.barh(y - 0.2, [r["measured_bytes"] / 1e3 for r in rank0], 0.4, label="measured (tensor bytes, rank 0)")
    ax.barh(y + 0.2, [r["predicted_bytes"] / 1e3 for r in rank0], 0.4, label="predicted (aihw.memory.estimator)")
    ax.set_yticks(y, labels, fontsize="small")
    ax.invert_yaxis()
    ax.set(xlabel="kB per rank (1 kB = 1000 bytes)", title="Per-rank training state: plain DP, ZeRO-1, FSDP")
    legend_outside(ax, ncols=1)
    tidy(fig)
    return fig
