"""Gantt charts of pipeline schedules (measured or simulated) and the bubble against the number of micro-batches."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from aihw.layout.schedules import SimulatedRun, TimelineEvent, bubble_fraction, idle_events
from aihw.plots.style import COLUMN_WIDTH_IN, legend_outside, styled, tidy

COLOURS = {"forward": "#4c78a8", "backward": "#f58518", "weight_grad": "#9d755d", "send": "#54a24b",
           "recv": "#b279a2", "idle": "#e8e8e8"}
LABELS = {"forward": "forward", "backward": "backward", "weight_grad": "backward, weight gradients (W)",
          "send": "send (post)", "recv": "receive (transfer)", "idle": "idle (bubble, waiting)"}


@styled
def plot_timeline(events: Sequence[TimelineEvent], *, stages: int | None = None, step_s: float | None = None,
                  unit: str = "ms", title: str = "", ax=None):
    """One row per stage (stage 0 on top); forward/backward bars carry their micro-batch number.

    ``unit``: "ms", "s" or "" (simulated time units). Idle gaps are drawn if the events do not include them.
    """
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 2.5))
    events = list(events)
    stages = stages or (max(e.stage for e in events) + 1 if events else 1)
    step_s = step_s if step_s is not None else max((e.end for e in events), default=1.0)
    if not any(e.kind == "idle" for e in events):
        events += idle_events(events, stages, step_s)
    scale = {"ms": 1e3, "s": 1.0, "": 1.0}[unit]
    seen = set()
    labelled = []
    for e in events:
        height = 0.35 if e.kind in ("send", "recv") else 0.8
        seen.add(e.kind)
        bars = ax.barh(e.stage, e.duration * scale, left=e.start * scale, height=height,
                       color=COLOURS.get(e.kind, "k"),
                       edgecolor="white" if e.kind in ("forward", "backward") else "none", linewidth=0.5)
        if e.kind in ("forward", "backward") and e.duration * scale > 0.02 * step_s * scale:
            text = str(e.micro_batch) if e.chunk == 0 else f"{e.micro_batch}.{e.chunk}"
            labelled.append((ax.text((e.start + e.duration / 2) * scale, e.stage, text, ha="center", va="center",
                                     fontsize="small", color="white"), bars.patches[0]))
    ax.set_yticks(range(stages), [f"stage {s}" for s in range(stages)])
    ax.set_ylim(stages - 0.5, -0.5)
    ax.set_xlim(0, step_s * scale)
    ax.set_xlabel(f"time ({unit})" if unit else "time (units of one forward)")
    ax.set_title(textwrap.fill(title, 62))
    handles = [Patch(color=COLOURS[k], label=LABELS[k]) for k in COLOURS if k in seen]
    # below the axis label at a fixed distance in points (a fraction of the axes' height would fall on the
    # label of a short panel)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=3.3, ncols=2,
              frameon=False)
    tidy(fig)
    _drop_labels_wider_than_bars(fig, labelled)
    return fig


def _drop_labels_wider_than_bars(fig, labelled) -> None:
    """Remove each micro-batch number that would spill out of its bar (short bars, many micro-batches)."""
    if not labelled:
        return
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    for text, bar in labelled:
        if text.get_window_extent(renderer).width > bar.get_window_extent(renderer).width - 1:
            text.remove()


@styled
def plot_simulated(run: SimulatedRun, *, ax=None):
    """Gantt chart of a :class:`~aihw.layout.schedules.SimulatedRun`, its bubble in the title."""
    v = f", v={run.v}" if run.schedule == "interleaved" else ""
    title = (f"simulated {run.schedule}: p={run.p}, m={run.m}{v}; bubble {run.bubble:.1%} "
             f"(closed form {bubble_fraction(run.p, run.m, v=run.v):.1%})")
    return plot_timeline(run.events, stages=run.p, step_s=run.step_s, unit="", title=title, ax=ax)


@styled
def plot_measured_and_simulated(measured: Sequence[TimelineEvent], step_s: float, simulated: SimulatedRun, *,
                                measured_bubble: float, fig=None):
    """Measured timeline (top) above the simulator's, fed with the measured stage times (bottom)."""
    fig = fig or plt.figure(figsize=(COLUMN_WIDTH_IN, 2.2 + 0.9 * simulated.p))
    top, bottom = fig.subplots(2, 1)
    plot_timeline(measured, stages=simulated.p, step_s=step_s, unit="ms", ax=top,
                  title=f"measured {simulated.schedule}: p={simulated.p}, m={simulated.m}; bubble "
                        f"{measured_bubble:.1%} (theory {bubble_fraction(simulated.p, simulated.m):.1%})")
    plot_timeline(simulated.events, stages=simulated.p, step_s=simulated.step_s, unit="ms", ax=bottom,
                  title=f"simulated with the measured stage times: bubble {simulated.bubble:.1%}")
    tidy(fig)
    return fig


@styled
def plot_bubble_vs_m(p_values: Sequence[int], m_max: int, *, measured: dict | None = None, ax=None):
    """Closed-form bubble (p - 1) / (m + p - 1) for each p against m; ``measured`` {p: [(m, bubble), ...]}."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 3.5))
    m = np.arange(1, m_max + 1)
    for i, p in enumerate(p_values):
        colour = f"C{i}"
        ax.plot(m, [(p - 1) / (k + p - 1) for k in m], color=colour, label=f"theory p={p}")
        if measured and p in measured:
            xs, ys = zip(*measured[p], strict=True)
            ax.plot(xs, ys, "o", color=colour, label=f"measured p={p}")
    ax.set_xlabel("micro-batches m")
    ax.set_ylabel("bubble (idle share of the step)")
    ax.set_ylim(0, 1)
    legend_outside(ax)
    tidy(fig)
    return fig


@styled
def plot_layout_times(layouts: Sequence, *, top: int = 6, names: Sequence[str] | None = None, title: str = "",
                      ax=None):
    """Stacked step-time terms (compute, bubble, exposed communication, overhead) of the ``top`` planner layouts;
    ``names``: a label per layout instead of its own (e.g. "published: ..." for a pinned one)."""
    shown = list(layouts)[:top]
    # labels wrapped: a one-line layout label would take the whole column width and leave no room for the bars
    labels = [textwrap.fill(label, 26) for label in (list(names)[:len(shown)] if names is not None
                                                      else [x.label for x in shown])]
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    row = max(0.8, 0.17 * lines + 0.25)  # inches per layout: room for its wrapped label
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(COLUMN_WIDTH_IN, 1.4 + row * len(shown)))
    terms = [t for t in ("compute", "bubble", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm", "overhead")
             if any(x.breakdown.get(t, 0) for x in shown)]
    left = np.zeros(len(shown))
    for i, term in enumerate(terms):
        values = np.array([x.breakdown[term] for x in shown])
        ax.barh(range(len(shown)), values, left=left, color=f"C{i}", label=term.replace("_", " "))
        left += values
    ax.set_yticks(range(len(shown)), labels, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("estimated step time (s)")
    if title:
        ax.set_title(textwrap.fill(title, 40))
    legend_outside(ax, ncols=3)
    tidy(fig)
    return fig
