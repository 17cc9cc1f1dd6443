"""Widgets of the lab "Number formats and mixed precision": a bit-level explorer and a training-run panel.

The work is done by plain functions (:func:`bit_view`, :func:`run_panel`) that the tests call directly; the
widgets only wire controls to them and show bad input inline.
"""

from __future__ import annotations

import html
import math

import ipywidgets as W

from aihw._validate import require_choice
from aihw.formats import numerics
from aihw.widgets._common import (
    error_box,
    figure_png,
    guarded_run,
    image_box,
    img_tag,
    run_button,
    show_error,
)

FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "e2m1", "e8m0", "int8", "int4")
_FIELD = {"sign": "#f4b6b6", "exponent": "#b6d0f4", "mantissa": "#b9e6b9"}


def parse_value(text: str) -> float:
    """A number typed by the learner ("1e-8", "-0.1", "inf"); ValueError naming the text otherwise."""
    try:
        return float(str(text).strip())
    except ValueError:
        raise ValueError(f"value must be a number such as 0.1, -3e-8 or inf, got {text!r}") from None


def bit_view(value: float | str, fmt: str, overflow: str = "format") -> str:
    """HTML: the bits of ``value`` in ``fmt`` coloured by field, the stored value, its kind, neighbours, error."""
    x = parse_value(value) if isinstance(value, str) else value
    mode = require_choice("overflow mode", overflow, numerics.OVERFLOW_MODES)
    e = numerics.explain(x, fmt, mode)  # type: ignore[arg-type]  # checked just above
    cells = []
    for field in ("sign", "exponent", "mantissa"):
        for b in getattr(e, field):
            cells.append(f'<td style="background:{_FIELD[field]};padding:2px 5px;font-family:monospace;'
                         f'border:1px solid #888">{b}</td>')
    legend = " ".join(f'<span style="background:{c};padding:0 4px">{k}</span>' for k, c in _FIELD.items())
    if e.format in ("int8", "int4"):
        legend = "two's complement integer (first bit: sign)"

    def g(v: float) -> str:
        return "—" if math.isnan(v) else f"{v:.10g}"

    rows = [("stored value", g(e.stored)), ("kind", e.kind), ("code", f"0x{e.code:X}"),
            ("neighbours", f"{g(e.below)} ≤ x ≤ {g(e.above)}"), ("ulp here", g(e.ulp)),
            ("absolute error", g(e.abs_error)), ("relative error", g(e.rel_error))]
    table = "".join(f"<tr><td style='padding-right:1em'>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
                    for k, v in rows)
    return (f"<div><b>{html.escape(str(x))}</b> in <b>{html.escape(e.format)}</b> "
            f"(overflow rule: {numerics.element_format(fmt).overflow_rule})<br>"
            f"<table style='border-collapse:collapse;margin:4px 0'><tr>{''.join(cells)}</tr></table>"
            f"<small>{legend}</small><table style='margin-top:4px'>{table}</table></div>")


def bit_explorer(value: str = "0.1", fmt: str = "bf16") -> W.VBox:
    """Type a value, pick a format: the bits, stored value, neighbours and rounding error update live."""
    text = W.Text(value=value, description="value")
    fmt_dd = W.Dropdown(options=FORMATS, value=fmt, description="format")
    overflow = W.Dropdown(options=numerics.OVERFLOW_MODES, value="format", description="overflow")
    out, err = W.HTML(), error_box()

    def update(*_: object) -> None:
        try:
            out.value = bit_view(text.value, fmt_dd.value, overflow.value)
            show_error(err, None)
        except ValueError as exc:
            show_error(err, exc)

    for w in (text, fmt_dd, overflow):
        w.observe(update, names="value")
    update()
    return W.VBox([W.HBox([text, fmt_dd, overflow]), err, out])


def compare_formats_html(value: float | str) -> str:
    """One value stored in every format: an HTML table of stored value, kind and relative error."""
    x = parse_value(value) if isinstance(value, str) else value
    rows = []
    for f in FORMATS:
        if f == "e8m0" and not x > 0:
            continue
        e = numerics.explain(x, f)
        rows.append(f"<tr><td>{f}</td><td>{e.stored:.8g}</td><td>{e.kind}</td><td>{e.rel_error:.3g}</td></tr>")
    return ("<table><tr><th>format</th><th>stored</th><th>kind</th><th>relative error</th></tr>"
            + "".join(rows) + "</table>")


def run_panel(experiment: str, steps: int) -> tuple[bytes, str]:
    """Run one of the lab's experiments for ``steps`` steps; return (PNG of the loss curves, summary HTML)."""
    from aihw.mixed.fp8 import FP8_RECIPES, Fp8Config, run_fp8
    from aihw.mixed.training import LOST_UPDATE_RECIPES, UNDERFLOW_RECIPES, MixedConfig, run
    from aihw.plots.formats import plot_losses

    experiments = ("underflow", "lost updates", "fp8 recipes")
    require_choice("experiment", experiment, experiments)
    curves: dict[str, tuple[float, ...]] = {}
    summary: list[str] = []
    if experiment == "underflow":
        for r in UNDERFLOW_RECIPES:
            res = run(MixedConfig(r, steps=steps, accumulation=2**14))
            curves[r] = res.losses
            summary.append(f"{r}: final loss {res.final_loss:.3f}, zero gradients "
                           f"{100 * sum(res.zero_grad_fraction) / len(res.zero_grad_fraction):.1f} %, "
                           f"skipped steps {res.skipped_steps}")
    elif experiment == "lost updates":
        for r in LOST_UPDATE_RECIPES:
            res = run(MixedConfig(r, steps=steps, lr=3e-5))
            curves[r] = res.losses
            summary.append(f"{r}: final loss {res.final_loss:.3f}, lost updates "
                           f"{100 * sum(res.lost_update_fraction) / len(res.lost_update_fraction):.1f} %")
    else:
        for f8 in FP8_RECIPES:
            fres = run_fp8(Fp8Config(f8, steps=steps))
            curves[f8] = fres.losses
            summary.append(f"{f8}: final loss {fres.final_loss:.3f}, overflows {fres.overflows}")
    fig = plot_losses(curves, title=experiment)
    return figure_png(fig), "<br>".join(html.escape(s) for s in summary)


def run_explorer() -> W.VBox:
    """Pick an experiment and a number of steps, press Run: loss curves and counts of what went wrong."""
    exp = W.Dropdown(options=("underflow", "lost updates", "fp8 recipes"), description="experiment")
    steps = W.BoundedIntText(value=40, min=5, max=300, description="steps")
    button, status, err = run_button("Run"), W.HTML(), error_box()
    image, summary = image_box(), W.HTML()

    def work() -> str:
        png, text = run_panel(exp.value, steps.value)
        image.value = img_tag(png, f"Line chart of training loss against step for each recipe of the "
                                   f"{exp.value} experiment ({steps.value} steps).")
        summary.value = text
        return "done"

    button.on_click(lambda _: guarded_run(button, status, err, "running…", work))
    return W.VBox([W.HBox([exp, steps, button, status]), err, image, summary])


DEFAULT_BLOCK = ", ".join(f"{v:g}" for v in [0.02, -0.01, 0.03, 0.005, -0.04, 0.01, 0.9, -0.02] * 4)


def parse_values(text: str) -> list[float]:
    """Comma- or space-separated numbers; ValueError naming the first bad entry."""
    parts = [p for p in str(text).replace(",", " ").split() if p]
    if not parts:
        raise ValueError("type at least one number (comma- or space-separated)")
    return [parse_value(p) for p in parts]


def block_view(values: str | list[float], fmt: str = "mxfp4", block: int | None = None) -> str:
    """HTML: ``values`` quantized in a block-scaled format: each block's scale, each element's stored value,
    and the error against one scale for the whole tensor (same element format)."""
    import numpy as np

    x = np.asarray(parse_values(values) if isinstance(values, str) else values, dtype=np.float64)
    q = numerics.block_quantize(x, fmt, block)  # raises on an unknown format or a size the block does not divide
    spec = numerics.BLOCK_FORMAT_SPECS[q.format]
    per_tensor = numerics.per_tensor_quantize(x, spec.element)
    err_b, err_t = numerics.quantization_error(x, q.values), numerics.quantization_error(x, per_tensor)
    size = spec.block if block is None else block
    scales = ", ".join(f"{s:.6g}" for s in np.ravel(q.scales))
    cells = "".join(
        f"<tr><td>{i}</td><td>{v:.6g}</td><td>{b:.6g}</td><td>{t:.6g}</td></tr>"
        for i, (v, b, t) in enumerate(zip(x, q.values, per_tensor, strict=True)))
    tensor = f"; per-tensor fp32 scale {q.tensor_scale:.6g}" if spec.tensor_scale else ""
    return (f"<div><b>{html.escape(q.format)}</b>: {spec.element} elements, one {spec.scale} scale per {size} "
            f"values ({spec.bits_per_value:g} bits per value){html.escape(tensor)}<br>"
            f"block scales: {scales}; saturated elements: {q.saturated}<br>"
            f"relative RMS error: block-scaled {100 * err_b['rel_rms']:.2f} %, one scale per tensor "
            f"{100 * err_t['rel_rms']:.2f} %; values rounded to 0: {100 * err_b['zero_fraction']:.0f} % vs "
            f"{100 * err_t['zero_fraction']:.0f} %"
            "<table><tr><th>#</th><th>value</th><th>block-scaled</th><th>per-tensor</th></tr>"
            f"{cells}</table></div>")


def block_explorer(values: str = DEFAULT_BLOCK, fmt: str = "mxfp4") -> W.VBox:
    """Type values, pick a block format: scales, stored values and errors against per-tensor scaling, live."""
    text = W.Textarea(value=values, description="values", layout=W.Layout(width="95%", height="4em"))
    fmt_dd = W.Dropdown(options=numerics.BLOCK_FORMATS, value=fmt, description="format")
    block = W.BoundedIntText(value=numerics.BLOCK_FORMAT_SPECS[fmt].block, min=1, max=1024, description="block")
    out, err = W.HTML(), error_box()

    def on_format(change: dict) -> None:
        block.value = numerics.BLOCK_FORMAT_SPECS[change["new"]].block

    def update(*_: object) -> None:
        try:
            out.value = block_view(text.value, fmt_dd.value, block.value)
            show_error(err, None)
        except ValueError as exc:
            show_error(err, exc)

    fmt_dd.observe(on_format, names="value")
    for w in (text, fmt_dd, block):
        w.observe(update, names="value")
    update()
    return W.VBox([text, W.HBox([fmt_dd, block]), err, out])


# Worked solutions of the lab's exercises: each derives the answer by hand arithmetic (tests compare it with the
# encoders the checks use); ``SOLUTIONS`` is what ``aihw.exercises.reveal`` shows.


def _worked_1() -> tuple[float, str]:
    ulp = 0.25 / 2**3  # [0.25, 0.5) = 2^-2 x [1, 2); 3 mantissa bits: 8 steps per binade
    value = round(0.3 / ulp) * ulp
    return value, (f"0.3 lies in [0.25, 0.5), where E4M3's 3 mantissa bits give steps of 0.25 / 8 = {ulp}. "
                   f"0.3 / {ulp} = {0.3 / ulp:.2f}, nearest integer {round(0.3 / ulp)}: stored {value}.")


def _worked_2() -> tuple[float, str]:
    exponent = math.floor(math.log2(65504 / 2.0))
    return 2.0**exponent, (f"The largest gradient times S must stay <= 65,504: S <= 32,752. The largest power of "
                           f"two below that is 2^{exponent} = {2**exponent:,}.")


def _worked_3() -> tuple[str, str]:
    return "e4m3", ("E4M3's largest value is 448 and it has no infinity: 1000 saturates to 448. E5M2 reaches "
                    "57,344, so 1000 is inside its range and rounds to its nearest neighbour, 1024 (steps of 128 "
                    "in [512, 1024)).")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in WORKED.items()}
