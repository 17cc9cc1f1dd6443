"""Widgets of the planning lab: pin a published run and compare; plan a run; all errors shown inline.

* :func:`published_run_view`: one published run's predicted vs published throughput, as an HTML table.
* :func:`published_run_widget` (live): choose a run and the efficiency assumptions; the comparison updates.
* :func:`plan_widget` (live): the model-parallel lab's planner widget, reused.
"""

from __future__ import annotations

import dataclasses
import html

import ipywidgets as W

from aihw.planning import planner, published
from aihw.plots.model_parallel import plot_layout_times
from aihw.widgets._common import error_box, figure_img, image_box, show_error
from aihw.widgets.model_parallel_lab import planner_widget as plan_widget

TERMS = ("compute", "bubble", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm", "overhead")


def _run_and_efficiency(name: str, gemm_fraction: float | None, overlap: bool, flat_collectives: bool | None):
    runs = {r.name: r for r in published.RUNS + published.LLAMA3_RUNS}
    if name not in runs:
        raise ValueError(f"unknown published run {name!r}; choose one of: {', '.join(runs)}")
    own = runs[name].efficiency
    eff = dataclasses.replace(own, gemm_fraction=gemm_fraction or None, overlap=overlap,
                              flat_collectives=own.flat_collectives if flat_collectives is None else flat_collectives)
    return runs[name], eff


def alternatives_figure(name: str, *, gemm_fraction: float | None = None, overlap: bool = True,
                        flat_collectives: bool | None = None, top: int = 4):
    """The published run's layout (top bar) against the ``top`` best layouts the planner finds for the same
    model, batch and cluster under the same assumptions: each bar the step time split into its terms."""
    run, eff = _run_and_efficiency(name, gemm_fraction, overlap, flat_collectives)
    pinned = run.predict(eff)
    others = [x for x in planner.plan(run.config(eff)).ranked if x.label != pinned.label][:top]
    names = [f"published: {pinned.label}", *(f"planner #{i}: {x.label}" for i, x in enumerate(others, 1))]
    return plot_layout_times([pinned, *others], top=top + 1, names=names,
                             title=f"{name}: the published layout against the planner's best")


def published_run_view(name: str, *, gemm_fraction: float | None = None, overlap: bool = True,
                       flat_collectives: bool | None = None) -> tuple[dict, str]:
    """(comparison row, HTML) for the published run called ``name`` under the given efficiency assumptions.

    The run's own implementation (``published.IMPLEMENTATIONS``: DeepSpeed 2021 for Table 2's ZeRO-3 rows) is
    the starting point; ``flat_collectives`` None keeps its choice.
    """
    run, eff = _run_and_efficiency(name, gemm_fraction, overlap, flat_collectives)
    row = published.compare(run, eff)
    total = sum(row["breakdown"].values())
    terms = "".join(f"<tr><td>{t.replace('_', ' ')}</td><td>{row['breakdown'][t]:.3g} s</td>"
                    f"<td>{row['breakdown'][t] / total:.0%}</td></tr>" for t in TERMS if row["breakdown"][t])
    lo, hi = row["band_tflops"]
    text = (f"<b>{html.escape(name)}</b> ({html.escape(row['layout'])}, {row['gpus']} GPUs, batch "
            f"{row['batch']} x {row['seq']}): fits <b>{row['fits']}</b> at {row['memory_gb']:.1f} GB per GPU; "
            f"predicted <b>{row['predicted_tflops']:.0f}</b> TFLOP/s per GPU ({lo:.0f}-{hi:.0f} over the band, "
            f"{row['convention']} FLOPs) against published <b>{row['published_tflops']:.0f}</b>: ratio "
            f"<b>{row['ratio']:.2f}</b>.<table><tr><th>term</th><th>seconds</th><th>share</th></tr>{terms}"
            f"</table><small>{html.escape(row['notes'])}</small>")
    return row, text


def published_run_widget(name: str = "GPT-3 175B PTD-P, 1536 GPUs") -> W.VBox:
    """Dropdown of published runs + efficiency assumptions; the comparison updates live."""
    style = {"description_width": "150px"}
    names = [r.name for r in published.RUNS + published.LLAMA3_RUNS]
    controls = {
        "name": W.Dropdown(options=names, value=name, description="published run", style=style),
        "gemm_fraction": W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.05,
                                       description="matmul fraction (0: chip's)", style=style),
        "overlap": W.Checkbox(value=True, description="overlap DP/ZeRO/CP communication"),
        "flat_collectives": W.Checkbox(value=any(r.efficiency.flat_collectives for r in published.RUNS
                                                 if r.name == name),
                                       description="flat collectives across nodes"),
    }
    err, out, chart = error_box(), W.HTML(), image_box()

    def update(change=None) -> None:
        if change is not None and change.get("owner") is controls["name"]:  # a new run: its own network model
            own = next(r for r in published.RUNS + published.LLAMA3_RUNS if r.name == controls["name"].value)
            if controls["flat_collectives"].value != own.efficiency.flat_collectives:
                controls["flat_collectives"].value = own.efficiency.flat_collectives  # re-enters update
                return
        values = {k: c.value for k, c in controls.items()}
        try:
            _, out.value = published_run_view(**values)
            chart.value = figure_img(alternatives_figure(**values),
                                     alt="Horizontal stacked bars of estimated step time: the published layout on "
                                         "top, the planner's best alternatives below, each split into its terms")
        except ValueError as exc:
            show_error(err, exc, stale=(chart,))
            out.value = ""
            return
        show_error(err, None)

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return W.VBox([*controls.values(), err, out, chart])


__all__ = ["published_run_view", "alternatives_figure", "published_run_widget", "plan_widget"]


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    peak, port = 989.4e12, 400e9 / 8
    value = peak / port
    return value, (f"Per step a GPU computes 6 N T FLOPs and moves 3 x 2N bytes (two gathers, one reduce-scatter): "
                   f"6NT / F >= 6N / W gives T >= F / W = {peak:.4g} / {port:.3g} = {value:,.0f} tokens per GPU.")


def _worked_2() -> tuple[float, str]:
    c, b, s, w = 4, 2, 24, 32
    value = (c - 1) * 2 * b * (s // c) * w * 4
    return float(value), (f"(c-1) = {c - 1} ring steps, each passing K and V (2) of b x s/c = {b} x {s // c} tokens "
                          f"x {w} values x 4 bytes: {value:,} bytes.")


def _worked_3() -> tuple[float, str]:
    h, kv, f, t = 8192, 1024, 28672, 8
    weights = 2 * h * h + 2 * h * kv + 3 * h * f
    threshold = 4 * h * (t - 1) * 989.4e12 / 50e9
    value = weights / threshold
    return value, (f"Matmul weights per layer P = 2h^2 + 2h kv + 3hf = {weights:,}; communication-bound unless "
                   f"P >= 4h(t-1)F/W = {threshold:,.0f}: ratio {value:.2f} < 1, so communication-bound over NDR.")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in WORKED.items()}
