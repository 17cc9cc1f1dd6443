"""Widgets of the lab "Making models cheaper".

Three panels act on the real trained digits model: quantization (bits, granularity, symmetric or not: cheap,
updates live), pruning (sparsity, structure, fine-tuning: waits for its Run button) and distillation
(temperature, student size, share of the data: Run button). Every run adds a point to a shared
accuracy-size-latency chart. The work is done by plain functions (``quantization_report``, ``pruning_report``,
``distillation_report``) that the tests call directly.
"""

from __future__ import annotations

import html
from typing import Literal, get_args

import ipywidgets as W
from torch import nn

from aihw._validate import require_choice
from aihw.cheaper import distill, prune, quantize_model
from aihw.cheaper.quantize import DTYPES, PerChannel, PerGroup, PerTensor, QuantScheme, choose_qparams, grid
from aihw.models import digits
from aihw.plots.cheaper import (
    plot_accuracy_bars,
    plot_latency_bars,
    plot_layer_sqnr,
    plot_tradeoff,
    plot_weight_grid,
)
from aihw.plots.style import panels
from aihw.widgets._common import (
    error_box,
    figure_png,
    guarded_run,
    image_box,
    img_tag,
    run_button,
    show_error,
    show_figure,
)

GranularityName = Literal["per-tensor", "per-channel", "per-group"]
GRANULARITIES: tuple[str, ...] = get_args(GranularityName)


def make_scheme(dtype: str, granularity: str, *, group_size: int = 32, symmetric: bool = True) -> QuantScheme:
    """A :class:`QuantScheme` from the widget's plain choices (ValueError on bad ones)."""
    require_choice("granularity", granularity, GRANULARITIES)
    gran: PerTensor | PerChannel | PerGroup = PerTensor()
    if granularity == "per-channel":
        gran = PerChannel(0)
    elif granularity == "per-group":
        gran = PerGroup(group_size)
    return QuantScheme(dtype, gran, symmetric)


def quantization_report(model, data, *, dtype: str = "int8", granularity: str = "per-channel",
                        group_size: int = 32, symmetric: bool = True, layer: int = 0) -> tuple[object, dict]:
    """Quantize ``model``'s weights with the chosen scheme (simulated); return (figure, summary).

    The figure shows the weights of one block of Linear layer number ``layer`` over its quantization grid, and
    the SQNR of every layer. The summary has accuracy, packed size and their fp32 baselines.
    """
    scheme = make_scheme(dtype, granularity, group_size=group_size, symmetric=symmetric)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not 0 <= layer < len(linears):
        raise ValueError(f"layer must be in [0, {len(linears) - 1}], got {layer}")
    errors = quantize_model.layer_errors(model, [scheme])
    quantized = quantize_model.quantize_weights(model, scheme)
    w = linears[layer].weight.detach()
    qparams = choose_qparams(w, scheme)
    block = w if isinstance(scheme.granularity, PerTensor) else (
        w[0] if isinstance(scheme.granularity, PerChannel) else w.reshape(-1, scheme.granularity.size)[0])
    fig, axes = panels(2)
    where = "whole layer" if isinstance(scheme.granularity, PerTensor) else "its first block"
    plot_weight_grid(block.numpy(), grid(qparams, 0).numpy(), title=f"layer {layer}, {where}: {scheme.label()}",
                     ax=axes[0])
    plot_layer_sqnr(errors, ax=axes[1])
    summary = {"scheme": scheme.label(), "accuracy": digits.accuracy(quantized, data.x_test, data.y_test),
               "fp32_accuracy": digits.accuracy(model, data.x_test, data.y_test),
               "size_bytes": quantize_model.storage_bytes(model, scheme),
               "fp32_size_bytes": quantize_model.storage_bytes(model),
               "sqnr_db": {r["layer"]: r["sqnr_db"] for r in errors}}
    return fig, summary


def pruning_report(model, data, *, sparsity: float = 0.8, structure: str = "unstructured",
                   fine_tune_epochs: int = 0, batch: int = 256) -> tuple[object, dict]:
    """Prune ``model`` (and fine-tune it ``fine_tune_epochs``), then measure accuracy, FLOPs and latency against
    the dense model. Returns (latency figure, summary)."""
    if isinstance(fine_tune_epochs, bool) or not isinstance(fine_tune_epochs, int) or fine_tune_epochs < 0:
        raise ValueError(f"fine_tune_epochs must be an integer >= 0, got {fine_tune_epochs!r}")
    pruned = prune.prune(model, sparsity, structure=structure)
    pruned = (prune.fine_tune(pruned, data, epochs=fine_tune_epochs) if fine_tune_epochs
              else prune.make_permanent(pruned))
    name = f"{structure} {sparsity:.0%}" + (f" +{fine_tune_epochs} ep" if fine_tune_epochs else "")
    card = digits.scorecard({"dense fp32": model, name: pruned}, data, batch=batch)
    flops = {"dense fp32": digits.linear_flops(model, batch), name: digits.linear_flops(pruned, batch)}
    fig = plot_latency_bars({c["name"]: c["latency_s"] for c in card}, flops=flops)
    summary = {"name": name, "accuracy": card[1]["accuracy"], "dense_accuracy": card[0]["accuracy"],
               "zero_fraction": prune.sparsity(pruned), "flops": flops[name], "dense_flops": flops["dense fp32"],
               "latency_s": card[1]["latency_s"], "dense_latency_s": card[0]["latency_s"],
               "size_bytes": card[1]["size_bytes"]}
    return fig, summary


def distillation_report(teacher, data, *, temperature: float = 4.0, alpha: float = 0.9, student_width: int = 64,
                        train_fraction: float = 1.0, epochs: int = 30) -> tuple[object, dict]:
    """Distil a one-hidden-layer student and train the same student alone; return (accuracy figure, summary)."""
    config = distill.DistillConfig(student_hidden=(student_width,), temperature=temperature, alpha=alpha,
                                   train_fraction=train_fraction, epochs=epochs)
    student, alone = distill.distill_and_control(teacher, data, config)
    acc = {name: digits.accuracy(m, data.x_test, data.y_test)
           for name, m in (("teacher", teacher), ("student alone", alone), ("distilled student", student))}
    fig = plot_accuracy_bars(acc, title=f"T = {temperature:g}, α = {alpha:g}, {train_fraction:.0%} of the data")
    card = digits.scorecard({"teacher": teacher, "student": student}, data)
    summary = {"accuracy": acc["distilled student"], "alone_accuracy": acc["student alone"],
               "teacher_accuracy": acc["teacher"], "size_bytes": card[1]["size_bytes"],
               "latency_s": card[1]["latency_s"], "teacher_latency_s": card[0]["latency_s"], "student": student}
    return fig, summary


TRADEOFF_ALT = ("Two scatter charts of test accuracy (%) against model size (kB, log scale) and against latency "
                "(µs per batch, log scale), one labelled point per model run so far, marker by family.")


def tradeoff_png(points: list[dict], *, last: int = 11) -> bytes:
    """The "every run so far" chart as PNG bytes: the baseline and the ``last`` runs."""
    return figure_png(plot_tradeoff([points[0], *points[1:][-last:]]))


def _line(summary: dict, keys: dict) -> str:
    parts = []
    for key, (label, fmt) in keys.items():
        parts.append(f"<b>{html.escape(label)}</b>: {format(summary[key], fmt)}")
    return " &nbsp;|&nbsp; ".join(parts)


def _quant_panel(model, data, add_point) -> W.VBox:
    dtype = W.Dropdown(options=DTYPES, value="int8", description="format")
    gran = W.ToggleButtons(options=GRANULARITIES, value="per-channel", description="scale per",
                           style={"button_width": "auto"})
    group = W.BoundedIntText(value=32, min=1, max=4096, description="group size", layout=W.Layout(width="180px"))
    sym = W.Checkbox(value=True, description="symmetric (zero point 0)")
    err, info, out = error_box(), W.HTML(), W.Output()

    def update(_=None) -> None:
        try:
            fig, s = quantization_report(model, data, dtype=dtype.value, granularity=gran.value,
                                         group_size=group.value, symmetric=sym.value)
        except Exception as exc:
            show_error(err, exc, stale=(info,))
            return
        show_error(err, None)
        info.value = _line({**s, "ratio": s["fp32_size_bytes"] / s["size_bytes"]},
                           {"scheme": ("scheme", ""), "accuracy": ("accuracy", ".1%"),
                            "fp32_accuracy": ("fp32", ".1%"), "ratio": ("smaller by", ".2f")}) + "×"
        show_figure(out, fig, alt="Histograms of one block's weights with the quantization grid drawn over them")
        add_point({"name": s["scheme"], "family": "quantized", "accuracy": s["accuracy"],
                   "size_bytes": s["size_bytes"], "latency_s": None})

    for control in (dtype, gran, group, sym):
        control.observe(update, names="value")
    update()
    return W.VBox([W.HBox([dtype, sym]), gran, group, err, info, out])


def _prune_panel(model, data, add_point) -> W.VBox:
    amount = W.FloatSlider(value=0.8, min=0.0, max=0.95, step=0.05, description="sparsity", readout_format=".2f")
    structure = W.ToggleButtons(options=prune.STRUCTURES, value="unstructured", description="structure",
                                style={"button_width": "auto"})
    epochs = W.IntSlider(value=0, min=0, max=10, description="fine-tune ep.")
    button, err, info, out = run_button("Prune and measure"), error_box(), W.HTML(), W.Output()

    def work() -> str:
        fig, s = pruning_report(model, data, sparsity=amount.value, structure=structure.value,
                                fine_tune_epochs=epochs.value)
        show_figure(out, fig, alt="Horizontal bars of measured latency per model")
        add_point({"name": s["name"], "family": "pruned", "accuracy": s["accuracy"], "size_bytes": s["size_bytes"],
                   "latency_s": s["latency_s"]})
        return _line({**s, "speedup": s["dense_latency_s"] / s["latency_s"]},
                     {"name": ("model", ""), "accuracy": ("accuracy", ".1%"), "zero_fraction": ("zeros", ".0%"),
                      "speedup": ("speed-up vs dense", ".2f")})

    button.on_click(lambda _: guarded_run(button, info, err, "pruning, fine-tuning and timing...", work))
    return W.VBox([amount, structure, epochs, button, err, info, out])


def _distill_panel(teacher, data, add_point) -> W.VBox:
    temp = W.FloatLogSlider(value=4.0, base=2, min=-1, max=4, step=0.5, description="temperature")
    alpha = W.FloatSlider(value=0.9, min=0.0, max=1.0, step=0.1, description="α (soft)")
    width = W.Dropdown(options=[8, 16, 32, 64, 128], value=64, description="student width")
    fraction = W.Dropdown(options=[("10% of the data", 0.1), ("all the data", 1.0)], value=1.0, description="data")
    button, err, info, out = run_button("Distil and compare"), error_box(), W.HTML(), W.Output()

    def work() -> str:
        epochs = 200 if fraction.value < 0.5 else 30
        fig, s = distillation_report(teacher, data, temperature=temp.value, alpha=alpha.value,
                                     student_width=width.value, train_fraction=fraction.value, epochs=epochs)
        show_figure(out, fig, alt="Horizontal bars of test accuracy: teacher, distilled student, student alone")
        add_point({"name": f"student {width.value} T={temp.value:g}", "family": "distilled",
                   "accuracy": s["accuracy"], "size_bytes": s["size_bytes"], "latency_s": s["latency_s"]})
        return _line(s, {"accuracy": ("distilled", ".1%"), "alone_accuracy": ("alone", ".1%"),
                         "teacher_accuracy": ("teacher", ".1%")})

    button.on_click(lambda _: guarded_run(button, info, err, "training the student twice (a few seconds)...", work))
    return W.VBox([temp, alpha, width, fraction, button, err, info, out])


def cheaper_lab(model, data) -> W.VBox:
    """The three panels in tabs, above one accuracy-size-latency chart that collects every run.

    The chart is an HTML ``<img>`` (a 2x PNG with alt text) replaced on every run: an Output widget written
    from a button callback could show nothing in the front end (the "every run so far" chart went blank after
    a prune run).
    """
    points = digits.scorecard({"fp32": model}, data, families={"fp32": "fp32"})
    chart = image_box()

    def add_point(point: dict) -> None:
        points.append(point)
        chart.value = img_tag(tradeoff_png(points), TRADEOFF_ALT)

    tabs = W.Tab(children=[_quant_panel(model, data, add_point), _prune_panel(model, data, add_point),
                           _distill_panel(model, data, add_point)])
    for i, title in enumerate(("Quantize", "Prune", "Distil")):
        tabs.set_title(i, title)
    return W.VBox([tabs, W.HTML("<b>Every run so far</b> (up and to the left is better):"), chart])


__all__ = ["GRANULARITIES", "make_scheme", "tradeoff_png", "quantization_report", "pruning_report", "distillation_report",
           "cheaper_lab"]


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    value = 256 * 64 // 2 + (256 * 64 // 32) * 4
    return float(value), (f"256 x 64 = 16,384 weights at half a byte = 8,192 bytes, plus 16,384 / 32 = 512 "
                          f"groups x 4-byte scale = 2,048 bytes: {value:,} bytes.")


def _worked_2() -> tuple[float, str]:
    value = 2.55 / 127.5
    return value, f"scale = max|x| / ((127 - (-128)) / 2) = 2.55 / 127.5 = {value:.4f}."


def _worked_3() -> tuple[float, str]:
    value = 2 * (64 * 64 + 64 * 64 + 64 * 10) + (64 + 64 + 10)
    return float(value), f"2·(64·64 + 64·64 + 64·10) multiply-add FLOP + (64 + 64 + 10) bias adds = {value:,} FLOP."


def _worked_4() -> tuple[str, str]:
    return "neurons", ("A dense kernel multiplies every stored zero like any other number: 90% zeros inside the "
                       "matrices leave the FLOPs and the time as they were. Removing neurons shrinks the matrices "
                       "themselves, so the same dense kernel does less work: 'neurons'.")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}
CHOICES = {4: _worked_4}  # categorical answers, for aihw.exercises.expected
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in (*WORKED.items(), *CHOICES.items())}
