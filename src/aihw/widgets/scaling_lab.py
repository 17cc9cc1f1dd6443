"""Widget and worked solutions of the lab "Scaling: from laws to chips".

:func:`scaling_view` is the plain function behind the widget (tests call it): for a FLOP budget, the
compute-optimal split under each method of :mod:`aihw.scaling.laws`, and the time and cost of the run on a catalogue
chip at a stated MFU. :func:`scaling_explorer` returns the live widget (analytic, so it updates on every change).
:data:`SOLUTIONS` holds the lab's worked solutions, computed when the learner calls
``aihw.exercises.reveal(SOLUTIONS, n)``, so the lab never prints its own answer key.
"""

from __future__ import annotations

import html

import ipywidgets as W

from aihw import scaling
from aihw.catalogue import hardware
from aihw.plots.scaling import plot_loss_vs_compute
from aihw.widgets._common import error_box, figure_img, image_box, show_error


def scaling_view(*, budget: float = 5.76e23, chip: str = "NVIDIA H100 SXM", chips: int = 1024,
                 mfu: float = 0.4) -> dict:
    """Every method's allocation of ``budget`` FLOP and the run's days and cost on ``chips`` x ``chip``."""
    run = scaling.training_run(budget, chip, chips=chips, mfu=mfu)
    methods = {m: {"params": a.params, "tokens": a.tokens, "tokens_per_param": a.tokens_per_param}
               for m, a in scaling.compute_optimal_all(budget).items()}
    return {"methods": methods, "days": run.days, "chip_hours": run.chip_hours, "usd": run.usd, "chip": run.chip}


def _html(view: dict) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(scaling.METHOD_LABELS[m])}</td><td>{v['params'] / 1e9:,.1f} B</td>"
        f"<td>{v['tokens'] / 1e12:,.2f} T</td><td>{v['tokens_per_param']:.1f}</td></tr>"
        for m, v in view["methods"].items())
    cost = f"{view['usd'] / 1e6:,.2f} M USD" if view["usd"] is not None else "no price in the catalogue"
    return (f"<table><tr><th>method</th><th>parameters</th><th>tokens</th><th>tokens/param</th></tr>{rows}</table>"
            f"<p>{html.escape(view['chip'])}: <b>{view['days']:,.1f} days</b>, {view['chip_hours']:,.0f} "
            f"chip-hours, {cost} (price snapshot)</p>")


def scaling_explorer() -> W.Widget:
    """Budget, chip, chip count and MFU in; allocations, days and cost out, live."""
    budget = W.FloatLogSlider(value=5.76e23, base=10, min=19, max=27, step=0.1, description="budget (FLOP)",
                              readout_format=".2e", continuous_update=False)
    chip = W.Dropdown(options=[c.name for c in hardware.list_chips() if "bf16" in c.flops],
                      value="NVIDIA H100 SXM", description="chip")
    chips = W.BoundedIntText(value=1024, min=1, max=1_000_000, description="chips")
    mfu = W.FloatSlider(value=0.4, min=0.05, max=1.0, step=0.05, description="MFU")
    out, err, chart = W.HTML(), error_box(), image_box()
    drawn = {"budget": None}

    def update(*_):
        try:
            out.value = _html(scaling_view(budget=budget.value, chip=chip.value, chips=chips.value, mfu=mfu.value))
            show_error(err, None)
        except ValueError as exc:
            show_error(err, exc)
            return
        if drawn["budget"] != budget.value:  # the chart depends on the budget only
            chart.value = frontier_img(budget.value)
            drawn["budget"] = budget.value

    for w in (budget, chip, chips, mfu):
        w.observe(update, names="value")
    update()
    return W.VBox([W.HBox([budget, chip]), W.HBox([chips, mfu]), err, chart, out])


def frontier_img(budget: float) -> str:
    """The loss-against-compute chart with ``budget``'s optimum marked, as an ``<img>`` with alt text."""
    fig = plot_loss_vs_compute(budget=budget)
    return figure_img(fig, alt=f"Loss against compute with the compute-optimal frontier; the dot is the optimum "
                               f"at {budget:.3g} FLOP")


def _solution_1() -> str:
    a = scaling.compute_optimal(1e24, "hoffmann-approach1")
    return (f"Approach 1 at C = 1e24 FLOP: N = {a.params / 1e9:.1f} B parameters, D = C / (6N) = "
            f"{a.tokens / 1e12:.2f} T tokens, {a.tokens_per_param:.1f} tokens per parameter.\n"
            "aihw scaling --compute 1e24 prints the same, beside the other methods.")


def _solution_2() -> str:
    run = scaling.training_run(scaling.training_flops(70e9, 1.4e12), "TPU v5p", chips=512, mfu=0.5)
    return (f"C = 6 x 70e9 x 1.4e12 = {run.flops:.3e} FLOP. Time = C / (512 x dense bf16 peak x 0.5) = "
            f"{run.days:.1f} days ({run.chip_hours:,.0f} chip-hours).")


def expected_3(budget: float = 5.76e23) -> str:
    """Exercise 3's answer, from the fits themselves: a property of language models would show in every estimation
    approach; a tokens-per-parameter optimum that only the rounded approach-3 constants give (more than twice
    approach 1's at Chinchilla's budget) belongs to that fit, an "artefact"."""
    rounded = scaling.compute_optimal(budget, "hoffmann-approach3-rounded").tokens_per_param
    approach1 = scaling.compute_optimal(budget, "hoffmann-approach1").tokens_per_param
    return "artefact" if rounded > 2 * approach1 else "finding"


def _solution_3() -> str:
    rounded = scaling.compute_optimal(5.76e23, "hoffmann-approach3-rounded")
    return (f"The rounded approach-3 constants give {rounded.tokens_per_param:.0f} tokens per parameter; approach 1, "
            "the Epoch refit and the rule of thumb give about 20. Besiroglu et al. 2024 traced the difference to "
            "rounding of the published constants and an optimizer stopped early: 'artefact'.")


CHOICES = {3: lambda: (expected_3(), _solution_3())}  # categorical answers, for aihw.exercises.expected
SOLUTIONS = {1: _solution_1, 2: _solution_2, 3: _solution_3}
