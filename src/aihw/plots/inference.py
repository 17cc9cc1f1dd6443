"""Figures of the inference chapter and lab: decode time vs bytes, batch sweeps on the roofline, waste, serving."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt

from aihw.plots.style import place_labels, styled

MEASURED, PREDICTED, CACHE = "#1f77b4", "#d62728", "#7f7f7f"


def _errorbar(ax, xs, points, **kw):
    med = [p.seconds * 1e3 for p in points]
    lo = [m - min(p.timing.samples) * 1e3 for m, p in zip(med, points, strict=True)]
    hi = [max(p.timing.samples) * 1e3 - m for m, p in zip(med, points, strict=True)]
    ax.errorbar(xs, med, yerr=[lo, hi], fmt="o", capsize=3, color=MEASURED, **kw)


@styled
def plot_decode_vs_bytes(points: Sequence, *, bandwidth: float, llc_bytes: int | None, title: str = ""):
    """Measured ms per token (median, min-max bars) against weight bytes, with bytes / bandwidth drawn in."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = [p.weight_bytes / 1e6 for p in points]
    _errorbar(ax, xs, points, label="measured (median, min-max)")
    top = max(xs) * 1.1
    ax.plot([0, top], [0, top * 1e6 / bandwidth * 1e3], "--", color=PREDICTED,
            label=f"predicted: bytes / {bandwidth / 1e9:.3g} GB/s")
    if llc_bytes:
        ax.axvline(llc_bytes / 1e6, color=CACHE, lw=1, ls=":")
        ax.text(llc_bytes / 1e6, ax.get_ylim()[1] * 0.95, " last-level cache", color=CACHE, va="top", fontsize=8)
    ax.set_xlabel("weights read per token (MB)")
    ax.set_ylabel("decode time per token (ms)")
    ax.set_title(title or "Decode at batch 1: time vs bytes")
    ax.legend(fontsize=8)
    return fig


@styled
def plot_batch_sweep(points: Sequence, *, title: str = ""):
    """Tokens/s and ms per step against batch: measured (markers) and max(bytes/BW, FLOP/peak) (line)."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.6))
    b = [p.batch for p in points]
    a1.plot(b, [p.tokens_per_s for p in points], "o-", color=MEASURED, label="measured")
    a1.plot(b, [p.batch / p.predicted_s for p in points], "--", color=PREDICTED, label="roofline prediction")
    a1.set_xscale("log", base=2)
    a1.set_yscale("log")
    a1.set_xlabel("batch (sequences per step)")
    a1.set_ylabel("tokens / s")
    a1.legend(fontsize=8)
    _errorbar(a2, b, points, label="measured")
    a2.plot(b, [p.memory_s * 1e3 for p in points], ":", color=PREDICTED, label="bytes / bandwidth")
    a2.plot(b, [p.compute_s * 1e3 for p in points], "-.", color="#2ca02c", label="FLOP / peak")
    a2.set_xscale("log", base=2)
    a2.set_xlabel("batch")
    a2.set_ylabel("ms per decode step")
    a2.legend(fontsize=8)
    fig.suptitle(title or "Batching: latency against throughput")
    return fig


@styled
def plot_roofline_points(*, bandwidth: float, peak: float, points: Sequence[tuple[str, float, float]],
                         title: str = ""):
    """The reader's roofline (measured bandwidth and peak) with (label, FLOP/byte, achieved FLOP/s) points."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ridge = peak / bandwidth
    xs = [0.05, ridge, max(ridge * 50, max(p[1] for p in points) * 4)]
    ax.plot(xs, [min(peak, x * bandwidth) for x in xs], color="black", lw=1.5, label="roofline (measured)")
    for label, intensity, achieved in points:
        colour = PREDICTED if label.startswith("prefill") else MEASURED
        ax.plot(intensity, achieved, "o", color=colour)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("FLOP / s")
    ax.set_title(title or "Decode and prefill on this machine's roofline")
    ax.margins(x=0.1, y=0.15)
    fig.set_layout_engine("constrained")
    place_labels(ax, [p[1] for p in points], [p[2] for p in points], [p[0] for p in points],
                 offsets=((5, -4, "left", "top"), (-5, -4, "right", "top"), (5, 4, "left", "bottom"),
                          (-5, 4, "right", "bottom"), (0, -8, "center", "top"), (0, 8, "center", "bottom")))
    return fig


@styled
def plot_waste(report, *, title: str = ""):
    """Time-averaged KV bytes reserved by each scheme, split into holding tokens and empty."""
    fig, ax = plt.subplots(figsize=(6.0, 2.6))
    names = ["contiguous (max length)", "paged (blocks)"]
    reserved = [report.contiguous_reserved, report.paged_reserved]
    scale = max(reserved)
    for i, r in enumerate(reserved):
        ax.barh(i, report.used / scale, color=MEASURED)
        ax.barh(i, (r - report.used) / scale, left=report.used / scale, color="#ffbb78", hatch="//")
        ax.text(r / scale + 0.01, i, f"{100 * (1 - report.used / r):.0f}% empty", va="center", fontsize=8)
    ax.set_yticks([0, 1], names)
    ax.set_xlim(0, 1.25)
    ax.set_xlabel("KV memory reserved (relative; blue = holds tokens)")
    ax.set_title(title or "KV-cache memory for a stream of requests")
    return fig


@styled
def plot_serving_sweep(estimates: Sequence, *, title: str = ""):
    """Analytic decode: ms per token and tokens/s against batch for one model on one chip."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    b = [e.batch for e in estimates]
    a1.plot(b, [e.decode_seconds_per_token * 1e3 for e in estimates], "o-", color=MEASURED, ms=3)
    a1.plot(b, [e.decode_memory_seconds * 1e3 for e in estimates], ":", color=PREDICTED, label="bytes / BW")
    a1.plot(b, [e.decode_compute_seconds * 1e3 for e in estimates], "-.", color="#2ca02c", label="FLOP / peak")
    a1.set_xscale("log", base=2)
    a1.set_xlabel("batch")
    a1.set_ylabel("ms per output token")
    a1.legend(fontsize=8)
    a2.plot(b, [e.tokens_per_second for e in estimates], "o-", color=MEASURED, ms=3)
    a2.set_xscale("log", base=2)
    a2.set_yscale("log")
    a2.set_xlabel("batch")
    a2.set_ylabel("tokens / s")
    e0 = estimates[0]
    fig.suptitle(title or f"{e0.model} on {e0.tp} x {e0.chip} ({e0.precision}, context {e0.context})")
    return fig
