"""Plots of the chapter "Scaling: from laws to chips" and its lab: predicted loss against compute with the
compute-optimal frontier, and tokens per parameter of each allocation method against the budget.

Everything is computed from :mod:`aihw.scaling` (the published fits), nothing measured. Each function takes
``ax=None`` and returns the figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from aihw.plots.style import COLUMN_WIDTH_IN, legend_outside, styled
from aihw.scaling import (
    EPOCH_APPROACH3,
    HOFFMANN_TABLE3,
    METHODS,
    TOKENS_PER_PARAM_RULE_OF_THUMB,
    ChinchillaFit,
    compute_optimal,
)

CHINCHILLA_BUDGET = 5.76e23  # FLOP: Chinchilla, 70B parameters on 1.4T tokens (Hoffmann et al. 2022)
SIZES = (400e6, 1e9, 10e9, 70e9, 280e9, 1e12)
SHORT_LABELS = {"hoffmann-approach1": "approach 1 (Table 3 fit)", "epoch-approach3": "approach 3, Epoch refit",
                "tokens-per-param-20": "20 tokens per parameter",
                "hoffmann-approach3-rounded": "approach 3 as printed (biased)"}


def _params_label(n: float) -> str:
    return f"{n / 1e12:g}T" if n >= 1e12 else f"{n / 1e9:g}B" if n >= 1e9 else f"{n / 1e6:g}M"


@styled
def plot_loss_vs_compute(*, fit: ChinchillaFit = EPOCH_APPROACH3, sizes: Sequence[float] = SIZES,
                         compute_range: tuple[float, float] = (1e18, 1e27), budget: float | None = CHINCHILLA_BUDGET,
                         ax=None):
    """Predicted reducible loss L(N, D = C / 6N) − E against training compute C for models of fixed size (thin
    lines, each flattening where more tokens stop helping it), and the compute-optimal frontier (thick: the
    lowest loss any size reaches at each budget), log-log. ``budget`` marks one budget's optimum (Chinchilla's
    by default)."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.6),
                                                                  layout="constrained")
    compute = np.logspace(np.log10(compute_range[0]), np.log10(compute_range[1]), 200)
    greys = plt.cm.Greys(np.linspace(0.4, 0.85, len(sizes)))
    for colour, n in zip(greys, sizes, strict=True):
        tokens = compute / (6 * n)
        keep = tokens >= n  # leave out runs of fewer tokens than parameters (far off any sensible run)
        if not keep.any():
            continue
        excess = [fit.loss(n, d) - fit.E for d in tokens[keep]]
        ax.plot(compute[keep], excess, color=colour, lw=1)
        ax.annotate(_params_label(n), (compute[keep][-1], excess[-1]), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize="small", color=colour)
    optimal = [fit.compute_optimal(c) for c in compute]
    ax.plot(compute, [fit.loss(n, d) - fit.E for n, d in optimal], color="C1", lw=2.5,
            label="compute-optimal frontier")
    if budget is not None:
        n, d = fit.compute_optimal(budget)
        ax.plot([budget], [fit.loss(n, d) - fit.E], "o", color="C1", ms=8, mec="black",
                label=f"optimum at {budget:.3g} FLOP: {_params_label(float(f'{n:.2g}'))} parameters, "
                      f"{d / 1e12:.2g}T tokens")
    ax.plot([], [], color="grey", lw=1, label="one model size (labelled), trained on more tokens to the right")
    ax.set(xscale="log", yscale="log", xlabel="training compute C = 6ND (FLOP)",
           ylabel=f"predicted loss − E ({fit.E:g}), nats/token",
           title="Loss against compute (approach-3 fit)" if fit is EPOCH_APPROACH3 else "Loss against compute")
    ax.set_xlim(compute_range[0], compute_range[1] * 30)  # room for the size labels at the right
    ax.grid(True, which="major", alpha=0.3)
    legend_outside(ax, ncols=1)
    return fig


@styled
def plot_tokens_per_param(*, compute_range: tuple[float, float] = (1e19, 2e28), methods: Sequence[str] = METHODS,
                          budget: float | None = CHINCHILLA_BUDGET, ax=None):
    """Compute-optimal tokens per parameter against the budget, one line per allocation method of
    :mod:`aihw.scaling`; Hoffmann et al.'s Table 3 rows as dots, the budget ``budget`` as a dotted line."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 4.0),
                                                                  layout="constrained")
    compute = np.logspace(np.log10(compute_range[0]), np.log10(compute_range[1]), 60)
    styles = {"hoffmann-approach1": "-", "epoch-approach3": "-", "tokens-per-param-20": "--",
              "hoffmann-approach3-rounded": ":"}
    for method in methods:
        ratio = [compute_optimal(c, method).tokens_per_param for c in compute]  # type: ignore[arg-type]
        ax.plot(compute, ratio, styles.get(method, "-"), lw=2, label=SHORT_LABELS.get(method, method))
    ax.plot([c for _, c, _ in HOFFMANN_TABLE3], [d / n for n, _, d in HOFFMANN_TABLE3], "ko", ms=4,
            label="Hoffmann et al. Table 3 rows")
    if budget is not None:
        ax.axvline(budget, color="grey", ls=":", lw=1)
        ax.annotate(f"Chinchilla\n{budget:.3g} FLOP" if budget == CHINCHILLA_BUDGET else f"{budget:.3g} FLOP",
                    (budget, 1), xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                    ha="left", va="top", fontsize="small", color="grey")
    ax.axhline(TOKENS_PER_PARAM_RULE_OF_THUMB, color="grey", lw=0.5)
    ax.set(xscale="log", yscale="log", xlabel="training compute C (FLOP)", ylabel="tokens per parameter",
           title="How many tokens per parameter is compute-optimal?")
    ax.set_yticks([5, 10, 20, 50, 100, 200], ["5", "10", "20", "50", "100", "200"])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.3)
    legend_outside(ax, ncols=1)
    return fig


__all__ = ["plot_loss_vs_compute", "plot_tokens_per_param", "CHINCHILLA_BUDGET"]
