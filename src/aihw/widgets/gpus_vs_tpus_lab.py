"""Widgets of the lab "Rooflines and systolic arrays".

Each builder returns a widget; the work is done by plain functions (``roofline_report``, ``systolic_step``,
``measurement_report``) that the tests call directly. Analytic views update live; the measurement waits for
its button.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import ipywidgets as W
import numpy as np

from aihw.catalogue import hardware
from aihw.chips import roofline, systolic
from aihw.grading import Assignment, Question
from aihw.plots.gpus_vs_tpus import RooflinePlot, plot_roofline, plot_trace_step
from aihw.plots.style import alt_text
from aihw.report import markdown_table
from aihw.widgets._common import (
    error_box,
    figure_img,
    guarded_run,
    image_box,
    img_tag,
    run_button,
    show_error,
    show_figure,
)

if TYPE_CHECKING:
    from aihw.measure.roofline import Dtype  # torch: imported only when the measurement panel is built

DEFAULT_CHIPS = ("H100 SXM", "TPU v5e")


def roofline_report(chips: Sequence[str], dtype: str, m: int, n: int, k: int) -> tuple[list, str]:
    """Estimates of an (m×k)·(k×n) matmul on each chip that supports ``dtype``, and an HTML summary table."""
    if not chips:
        raise ValueError("choose at least one chip")
    estimates: list = []
    rows: list[dict[str, object]] = []
    for name in chips:
        chip = hardware.get_chip(name)
        if dtype not in chip.flops:
            rows.append({"chip": chip.name, "bound": f"no dense {dtype} mode"})
            continue
        est = roofline.estimate_matmul(chip, m, n, k, dtype)
        estimates.append((chip, est))
        rows.append({"chip": chip.name, "intensity": est.intensity, "ridge": est.ridge_point, "bound": est.bound,
                     "tflops": est.attainable_flops / 1e12, "pct": 100 * est.fraction_of_peak,
                     "time_us": est.time_s * 1e6})
    table = markdown_table(rows, {"chip": "chip", "intensity": "intensity (FLOP/B)", "ridge": "ridge (FLOP/B)",
                                  "bound": "bound", "tflops": "attainable TFLOP/s", "pct": "% of peak",
                                  "time_us": "time ≥ (µs)"},
                           {"intensity": ",.1f", "ridge": ",.0f", "tflops": ",.1f", "pct": ".1f", "time_us": ",.2f"})
    return estimates, _markdown_table_to_html(table)


def _markdown_table_to_html(table: str) -> str:
    lines = [line.strip("|").split("|") for line in table.splitlines() if not line.startswith("|---")]
    head, body = lines[0], lines[1:]
    cells = "".join(f"<th>{html.escape(h.strip())}</th>" for h in head)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>" for r in body)
    return f"<table><tr>{cells}</tr>{rows}</table>"


def roofline_explorer(chips: Sequence[str] = DEFAULT_CHIPS, dtype: str = "bf16",
                      shape: tuple[int, int, int] = (4096, 4096, 4096)) -> W.VBox:
    """Pick chips, a precision and a matmul shape; see the rooflines, the op on them and its bound."""
    names = [c.name for c in hardware.list_chips()]
    pick = W.SelectMultiple(options=names, value=tuple(hardware.get_chip(c).name for c in chips),
                            rows=6, description="chips")
    dtype_box = W.Dropdown(options=[p for p in hardware.PRECISIONS if p != "int4"], value=dtype, description="dtype")
    dims = [W.BoundedIntText(value=v, min=1, max=10**7, description=d, layout=W.Layout(width="160px")) for d, v in zip("MNK", shape,
                                                                                             strict=True)]
    err, table, image = error_box(), W.HTML(), image_box()
    canvas = RooflinePlot()

    def update(_=None) -> None:
        try:
            estimates, table.value = roofline_report(pick.value, dtype_box.value, *(d.value for d in dims))
        except Exception as exc:
            show_error(err, exc, stale=(table,))
            return
        show_error(err, None)
        canvas.update([c for c, _ in estimates], dtype_box.value, ops=[est for _, est in estimates[:1]])
        image.value = img_tag(canvas.png(), alt_text(canvas.fig, "Log-log roofline chart"))

    for control in (pick, dtype_box, *dims):
        control.observe(update, names="value")
    update()
    return W.VBox([W.HBox([pick, W.VBox([dtype_box, *dims])]), err, table, image])


def systolic_step(A: np.ndarray, B: np.ndarray, *, size: int, dataflow: systolic.Dataflow, cycle: int) -> tuple[object, dict]:
    """Trace a small array, draw cycle ``cycle`` and count the accesses up to it. Returns (figure, counters)."""
    tr = systolic.trace(A, B, size=size, dataflow=dataflow)
    if not 0 <= cycle < tr.cycles:
        raise ValueError(f"cycle must be in [0, {tr.cycles - 1}], got {cycle}")
    fired = tr.fire[: cycle + 1]
    counters = {"cycle": cycle, "cycles in all": tr.cycles, "phase": tr.phase[cycle],
                "PEs firing now": int(tr.fire[cycle].sum()), "MACs so far": int(fired.sum()),
                "MACs in all": int(tr.fire.sum()),
                "utilisation so far": float(fired.sum() / ((cycle + 1) * size * size))}
    return plot_trace_step(tr, cycle), counters


def systolic_stepper(size: int = 3, m: int = 4, k: int = 3, n: int = 3, seed: int = 0) -> W.VBox:
    """Step (or play) a small systolic array cycle by cycle, with live counters."""
    rng = np.random.default_rng(seed)
    A, B = rng.integers(-3, 4, (m, k)), rng.integers(-3, 4, (k, n))
    total = systolic.trace(A, B, size=size, dataflow="weight-stationary").cycles
    flow = W.ToggleButtons(options=["weight-stationary", "output-stationary"], description="dataflow",
                         style={"button_width": "auto"})
    cycle = W.IntSlider(value=0, min=0, max=total - 1, description="cycle", continuous_update=False)
    play = W.Play(value=0, min=0, max=total - 1, interval=700, description="play")
    W.jslink((play, "value"), (cycle, "value"))
    err, counters, image = error_box(), W.HTML(), image_box()

    def redraw(_=None) -> None:
        try:
            fig, info = systolic_step(A, B, size=size, dataflow=flow.value, cycle=cycle.value)
        except Exception as exc:
            show_error(err, exc, stale=(counters,))
            return
        show_error(err, None)
        counters.value = " &nbsp;|&nbsp; ".join(
            f"<b>{k}</b>: {v:.0%}" if isinstance(v, float) else f"<b>{k}</b>: {v}" for k, v in info.items())
        image.value = figure_img(fig, alt="The systolic array's processing elements at one cycle, firing ones "
                                          "shaded, each showing its a, b and partial-sum registers")

    def new_flow(_=None) -> None:
        last = systolic.trace(A, B, size=size, dataflow=flow.value).cycles - 1
        cycle.value = min(cycle.value, last)
        cycle.max = play.max = last
        redraw()

    cycle.observe(redraw, names="value")
    flow.observe(new_flow, names="value")
    redraw()
    return W.VBox([flow, W.HBox([play, cycle]), err, counters, image])


def measurement_report(measurement, dtype: str = "fp32") -> str:
    """One-paragraph HTML summary of a DeviceMeasurement: best FLOP/s, bandwidth and ridge point."""
    flops, bw = measurement.best_flops(dtype), measurement.best_bandwidth()
    name = html.escape(measurement.label)
    return (f"<b>{name}</b>: best {dtype} matmul {flops / 1e9:,.1f} GFLOP/s, copy bandwidth {bw / 1e9:,.1f} GB/s "
            f"(read + write), ridge point {flops / bw:,.1f} FLOP/byte.")


def roofline_view(measurement, detection, chips: Sequence[str] = DEFAULT_CHIPS, dtype: str = "fp32") -> dict:
    """What the lab plots for a measurement: the chips (the detected chip first, its own roofline), the dtype to
    plot (``dtype`` if it was measured, else the first measured one), the achieved ÷ datasheet table (HTML) and
    the detection note. ``detection`` is an :class:`aihw.catalogue.detect.Detection` (``detect_chip()``)."""
    from aihw.measure.roofline import achieved_vs_peak

    names = [hardware.get_chip(c).name for c in chips]
    if detection.chip is not None:
        names = [detection.chip.name] + [n for n in names if n != detection.chip.name]
    measured = [d for d in ("fp32", "tf32", "fp16", "bf16", "fp8") if any(p.dtype == d for p in measurement.matmul)]
    if not measured:
        raise ValueError("the measurement has no matmul point to plot; skipped: "
                         + ("; ".join(measurement.skipped) or "nothing"))
    plot_dtype = dtype if dtype in measured else measured[0]
    rows = achieved_vs_peak(measurement, detection.chip)
    table = markdown_table(
        [{**r, "measured": f"{r['measured']:,.4g}", "fraction": "—" if r["fraction"] is None else f"{r['fraction']:.2f}",
          "datasheet": "—" if r["datasheet"] is None else f"{r['datasheet']:,.4g}"} for r in rows],
        {"quantity": "quantity", "measured": "measured", "datasheet": "datasheet", "unit": "unit",
         "fraction": "measured ÷ datasheet", "note": "note"})
    return {"chips": names, "dtype": plot_dtype, "rows": rows, "table_html": _markdown_table_to_html(table),
            "note": detection.note, "label": "measured on " + measurement.label}


def measure_panel(chips: Sequence[str] = DEFAULT_CHIPS, dtype: Dtype | None = None, config=None) -> W.VBox:
    """A button that measures this machine and adds it to the roofline.

    ``config`` is an :class:`aihw.measure.roofline.MeasureConfig`; by default ``lab_config()``: a few seconds of
    fp32 on a CPU, the full sweep (fp32/tf32/fp16/bf16/fp8 up to n = 8192) on a GPU, whose points then sit on the
    detected chip's own roofline with a measured ÷ datasheet table. ``dtype`` is the roofline drawn: by default
    the GPU's tensor-core 16-bit float (bf16; fp16 on a T4), fp32 on a CPU (``aihw.runtime.device.roofline_dtype``).
    """
    from aihw.measure.roofline import lab_config, measure_device
    from aihw.runtime.device import detect_chip, pick_device, roofline_dtype  # torch: only on building it

    button = run_button("Measure my device")
    status, err, out = W.HTML("Press the button: it times matmuls and a memory copy (about 10 s on a CPU, up to a "
                              "minute on a GPU)."), error_box(), W.Output()
    table = W.HTML()

    def work() -> str:
        cfg = config or lab_config()
        mine = measure_device(cfg)
        device = pick_device(cfg.device)
        view = roofline_view(mine, detect_chip(device), chips, dtype or roofline_dtype(device))
        show_figure(out, plot_roofline(view["chips"], view["dtype"], measured=mine),
                    alt="Log-log roofline chart with this machine's measured roof and matmuls")
        table.value = view["table_html"] + f"<p>{html.escape(view['note'])}</p>"
        return measurement_report(mine, view["dtype"])

    button.on_click(lambda _: guarded_run(button, status, err, "measuring...", work))
    return W.VBox([button, status, err, out, table])


__all__ = ["roofline_report", "roofline_explorer", "systolic_step", "systolic_stepper", "measurement_report",
           "measure_panel", "roofline_view"]


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    from aihw.catalogue import hardware

    h100 = hardware.get_chip("H100 SXM")
    value = h100.peak_flops("bf16") / h100.bandwidth_bytes_per_s
    return value, (f"ridge = dense bf16 peak / memory bandwidth = {h100.peak_flops('bf16') / 1e12:,.1f} TFLOP/s / "
                   f"{h100.bandwidth_bytes_per_s / 1e12:.2f} TB/s = {value:.0f} FLOP/byte.")


def _worked_2() -> tuple[float, str]:
    from aihw.catalogue import hardware

    bw = hardware.get_chip("TPU v5e").bandwidth_bytes_per_s
    value = 8192 * 8192 * 2 / bw * 1e6
    return value, (f"2·8192² = {2 * 8192**2:.3g} FLOP on about 8192² x 2 bytes of matrix: intensity ~1 FLOP/byte, "
                   f"far below the ridge, so memory-bound. Time >= bytes / bandwidth = {value:.0f} µs.")


def _worked_3() -> tuple[float, str]:
    import numpy as np

    from aihw.chips import systolic

    value = float(systolic.trace(np.ones((4, 3)), np.ones((3, 3)), size=3).cycles)
    return value, (f"Counting the stepper's cycles: {value:.0f} (3 cycles to load the weights, then 4 rows of A enter "
                   "one per cycle and the last partial sum needs the array's height and width to drain).")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in WORKED.items()}


def _ridge_h100() -> float:
    h100 = hardware.get_chip("H100 SXM")
    return roofline.ridge_point(h100.peak_flops("bf16"), h100.bandwidth_bytes_per_s)


def _decode_v5e() -> roofline.OpEstimate:
    return roofline.estimate_matmul("TPU v5e", 1, 8192, 8192, "bf16")


def _batch_v5e() -> roofline.OpEstimate:
    return roofline.estimate_matmul("TPU v5e", 512, 8192, 8192, "bf16")


def _solution_2_bound() -> str:
    big = _batch_v5e()
    return (f"512 tokens: {big.flops:.3g} FLOP over {big.bytes_moved:.3g} bytes (the 8192² weights once, plus both "
            f"512 × 8192 activations) = {big.intensity:.0f} FLOP/byte, against the v5e's ridge of "
            f"{big.ridge_point:.0f} FLOP/byte: {big.bound}-bound. The weights are read once for all 512 tokens, which is "
            "why batching decode requests pays.")


# The graded questions (aihw.grading): the lab's cells call ASSIGNMENT.check("q1", answer_1), which compares with
# the calculators below; scripts/grade.py scores executed notebooks against the same calculators.
ASSIGNMENT = Assignment("gpus_vs_tpus_lab", (
    Question("q1", "answer_1", _ridge_h100, SOLUTIONS[1], unit="FLOP/byte",
             hint="The ridge is where the two roofs meet; `aihw hardware show h100` has both numbers."),
    Question("q2", "answer_2", lambda: _decode_v5e().time_s * 1e6, SOLUTIONS[2], rel_tol=0.05, unit="µs",
             hint="Which operand is largest? Its bytes, over the memory bandwidth, bound the time from below."),
    Question("q2_bound", "answer_2_bound", lambda: _batch_v5e().bound, _solution_2_bound, choices=("compute", "memory"),
             hint="Count the FLOPs and the bytes of all three matrices, then compare with the v5e's ridge point."),
    Question("q3", "answer_3", lambda: systolic.predicted_cycles(4, 3, 3, size=3, dataflow="weight-stationary"),
             SOLUTIONS[3], rel_tol=0, unit="cycles",
             hint="Loading the weights takes one cycle per row; then the last activation must cross the array."),
))
