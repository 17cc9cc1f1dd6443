"""Speed of the chapter-1 lab's analytic widgets: computation alone and computation plus redrawn figure.

Target (issue 2): an analytic widget update in <= 100 ms. Prints a table; exits 0 either way (a bench reports,
it does not gate), but marks each row PASS/FAIL against the target.
"""

from __future__ import annotations

import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from aihw.plots.gpus_vs_tpus import plot_roofline  # noqa: E402
from aihw.widgets import gpus_vs_tpus_lab  # noqa: E402
from aihw.widgets._common import figure_png  # noqa: E402

TARGET_S = 0.100


def _time(fn, repeats: int = 15) -> float:
    fn()  # warm-up (imports, font cache)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    chips = ("H100 SXM", "TPU v5e", "MI300X")
    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (4, 3)), rng.integers(-3, 4, (3, 3))

    def report() -> None:
        gpus_vs_tpus_lab.roofline_report(chips, "bf16", 4096, 4096, 4096)

    def report_and_figure() -> None:
        estimates, _ = gpus_vs_tpus_lab.roofline_report(chips, "bf16", 4096, 4096, 4096)
        fig = plot_roofline([c for c, _ in estimates], "bf16", ops=[estimates[0][1]])
        fig.canvas.draw()  # render, as the notebook's inline backend does
        plt.close(fig)

    def stepper_frame() -> None:
        fig, _ = gpus_vs_tpus_lab.systolic_step(A, B, size=3, dataflow="weight-stationary", cycle=5)
        figure_png(fig)

    stepper = gpus_vs_tpus_lab.systolic_stepper()
    slider = next(w for w in stepper.children[1].children if type(w).__name__ == "IntSlider")

    def stepper_update() -> None:
        slider.value = (slider.value + 1) % (slider.max + 1)

    box = gpus_vs_tpus_lab.roofline_explorer(chips=chips)
    m_box = next(w for w in box.children[0].children[1].children if getattr(w, "description", "") == "M")

    def explorer_update() -> None:
        m_box.value = 1 if m_box.value != 1 else 4096  # triggers a full update through the observer

    rows = [("roofline report (3 chips)", _time(report)),
            ("static figure, built and rendered anew", _time(report_and_figure)),
            ("systolic stepper frame (figure render)", _time(stepper_frame)),
            ("stepper: move slider, full widget update", _time(stepper_update)),
            ("explorer: change M, full widget update", _time(explorer_update, repeats=5))]
    print(f"{'analytic widget update':<42} {'median ms':>10} {'target ms':>10}  result")
    for name, seconds in rows:
        verdict = "PASS" if seconds <= TARGET_S else "FAIL"
        if name.startswith("static"):
            verdict = "(no target: drawn once per book build)"
        print(f"{name:<42} {seconds * 1e3:>10.1f} {TARGET_S * 1e3:>10.0f}  {verdict}")
    print("(widget rows include rendering the PNG the widget shows; the static-figure row is the book's path)")


if __name__ == "__main__":
    main()
