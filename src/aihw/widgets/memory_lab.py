"""Widget of the lab "Memory math": size a model live, then measure the small model on this machine.

The live view is HTML (stacked bars, verdict) so it redraws in about a millisecond; the matplotlib figure
(:func:`draw`) is for the static book and for the "Measure it" result. "Measure it" switches the controls to
the custom dims (fp32, one device, training), so the bars are the prediction for exactly the run it measures,
then draws the measured components as a hatched bar under them, with predicted and measured peaks marked.

The builder :func:`memory_explorer` returns the widget. The work is in plain functions tests call directly:
:func:`memory_view` (estimate, verdict and chips needed for a set of control values) and
:func:`measure_view` (a real training step of the custom-sized TinyGPT, behind the "Measure it" button).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

import ipywidgets as W

from aihw.catalogue import hardware
from aihw.grading import Assignment, Question
from aihw.memory.estimator import (
    GB,
    OPTIMIZER_STATE_BYTES,
    PRECISION_BYTES,
    GiB,
    MemoryConfig,
    Mode,
    Optimizer,
    ZeroStage,
    estimate,
    estimate_memory,
)
from aihw.memory.fit import devices_needed
from aihw.plots.memory import COLOURS, plot_breakdown, plot_prediction_with_measurement
from aihw.plots.style import subplots
from aihw.transformer.flops import RECOMPUTE_CHOICES, Recompute
from aihw.transformer.shapes import ModelShape, list_presets, resolve_model
from aihw.widgets._common import error_box, guarded_run, run_button, show_error, show_figure

if TYPE_CHECKING:
    from aihw.measure.memory import MeasuredOptimizer  # torch: loaded only when a measurement is asked for

CUSTOM = "custom (raw dims)"
CUSTOM_FIELDS = ("hidden", "layers", "heads", "vocab")  # shown only when the model is CUSTOM
MEASURE_LIMITS = {"hidden": 512, "layers": 8, "seq": 1024, "batch": 32, "vocab": 4096}  # keeps a run < ~10 s


def memory_view(*, model: str = "llama-2-7b", hidden: int = 64, layers: int = 2, heads: int = 4, vocab: int = 256,
                precision: str = "bf16", mode: Mode = "train", optimizer: Optimizer = "adamw", batch: int = 1,
                seq: int = 1024, recompute: Recompute = "none", zero: ZeroStage = 0, dp: int = 1, tp: int = 1, pp: int = 1,
                chip: str = "NVIDIA H100 SXM") -> dict:
    """Estimate for the control values; verdict against ``chip`` and the chips needed. Raises ValueError."""
    shape = (ModelShape("custom", hidden, layers, heads, vocab=vocab, max_seq=seq) if model == CUSTOM
             else resolve_model(model))
    cfg = MemoryConfig(model=shape, precision=precision, mode=mode, optimizer=optimizer, batch=batch, seq=seq,
                       recompute=recompute, zero=zero, dp=dp, tp=tp, pp=pp)
    est = estimate(cfg)
    cap = float(hardware.get_chip(chip).memory_bytes)
    fits = est.per_device_bytes <= cap
    needed = devices_needed(cfg, cap)
    word = "fits" if fits else "does not fit"
    rest = (f" on one {chip} ({cap / GB:,.0f} GB): {_size(est.per_device_bytes)} per device, {est.devices} device(s). ")
    split = f"Fewest chips that hold it ({'ZeRO stage ' + str(zero) if mode == 'train' else 'TP then PP'}): "
    text = word + rest + (f"{split}{needed}." if needed else "No split of this kind holds it.")
    verdict = (f"<b style='color:{'#1b7f3b' if fits else '#b00020'}'>{word}</b>{html.escape(rest)}"
               + (f"{html.escape(split)}<b>{needed}</b>." if needed else "No split of this kind holds it."))
    return {"estimate": est, "capacity_bytes": cap, "fits": fits, "chips_needed": needed, "verdict": verdict,
            "verdict_text": text}


def measure_view(*, hidden: int, layers: int, heads: int, vocab: int, seq: int, batch: int,
                 recompute: Recompute = "none", optimizer: MeasuredOptimizer = "adamw") -> list[dict]:
    """Run the TinyGPT with these dims on this machine (fp32) and return predicted-vs-measured rows."""
    from aihw.measure.memory import MeasureConfig, compare  # torch loads only when a measurement is asked for
    from aihw.models.tinygpt import TinyGPTConfig

    for name, limit in MEASURE_LIMITS.items():
        value = {"hidden": hidden, "layers": layers, "seq": seq, "batch": batch, "vocab": vocab}[name]
        if value > limit:
            raise ValueError(f"{name}={value} is too large to measure here (at most {limit}); use custom dims")
    if optimizer == "adam8bit":
        raise ValueError("the measurement uses torch optimizers: sgd, sgd_momentum, adam, adamw (not adam8bit)")
    model = TinyGPTConfig(vocab=vocab, width=hidden, depth=layers, heads=heads, seq_len=seq, recompute=recompute)
    return compare(MeasureConfig(model=model, batch=batch, optimizer=optimizer))


def measured_settings(values: dict) -> dict:
    """The control values of what "Measure it" runs: the custom dims on one device, fp32, training.

    The widget switches to these before measuring, so the bars it draws are the prediction for exactly the
    measured config and the measurement can be drawn on top of them.
    """
    return {**values, "model": CUSTOM, "precision": "fp32", "mode": "train", "zero": 0, "dp": 1, "tp": 1, "pp": 1}


def draw(view: dict, measured: list[dict] | None = None):
    """The static figure: stacked bars (one device, per device); with ``measured`` (rows of
    :func:`measure_view` for the config of ``view``) the measured components stacked beside the prediction."""
    est = view["estimate"]
    if measured:
        return plot_prediction_with_measurement(
            est, measured, title=f"{est.config.model.name}: predicted and measured (fp32, one device)")
    fig, ax = subplots(row_height=3.9)
    plot_breakdown({"one device holds all": _as_total(est), f"per device ({est.devices} devices)": est},
                   ax=ax, capacity_bytes=view["capacity_bytes"])
    ax.set_title(est.config.model.name if est.config.model else "", fontsize=10)
    return fig


def _size(nbytes: float) -> str:
    """'12.3 GB (11.5 GiB)' for big numbers, '4.56 MB' for the small measured model."""
    if nbytes >= 0.5 * GB:
        return f"{nbytes / GB:,.1f} GB ({nbytes / GiB:,.1f} GiB)"
    return f"{nbytes / 1e6:,.3g} MB"


def _unit(nbytes: float) -> tuple[float, str]:
    return (GB, "GB") if nbytes >= 0.5 * GB else (1e6, "MB")


def _bar(label: str, parts: dict, total: float, scale: float, unit: tuple[float, str], *, hatch: bool = False,
         markers: tuple = (), cap: float | None = None) -> str:
    div, name = unit
    stripes = "background-image:repeating-linear-gradient(45deg,transparent 0 4px,rgba(255,255,255,.45) 4px 7px);"
    segs = "".join(
        f'<div title="{k}: {v / div:,.3g} {name}" style="width:{100 * v / scale:.3f}%;background-color:{COLOURS[k]};'
        f'{stripes if hatch else ""}height:100%"></div>' for k, v in parts.items() if v > 0)
    lines = [(cap, "2px dashed black")] if cap is not None else []
    lines += list(markers)
    marks = "".join(f'<div style="position:absolute;left:{min(100.0, 100 * x / scale):.3f}%;top:-4px;bottom:-4px;'
                    f'border-left:{style}"></div>' for x, style in lines)
    return (f'<div style="display:flex;align-items:center;margin:4px 0"><div style="width:190px">{label}</div>'
            f'<div style="position:relative;flex:1;height:22px;display:flex;background:#eee">{segs}{marks}</div>'
            f'<div style="width:110px;text-align:right">{total / div:,.3g} {name}</div></div>')


def html_bars(view: dict, measured: list[dict] | None = None) -> str:
    """The live view as HTML (a control change redraws in well under a millisecond; matplotlib takes ~0.2 s):
    stacked bars for one device holding all and per device, the chip's memory as a dashed line, and, with
    ``measured`` rows for this very config, a hatched bar of the measured components with both peaks marked."""
    est, cap = view["estimate"], view["capacity_bytes"]
    by = {r["component"]: r for r in measured or ()}
    meas_parts = {k: by[k]["measured"] for k in ("weights", "gradients", "optimizer", "activations") if k in by}
    peaks = [by["peak"]["predicted"], by["peak"]["measured"]] if "peak" in by else []
    biggest = max([est.total_bytes, sum(meas_parts.values()), *peaks])
    cap_shown = cap <= 4 * biggest  # a 80 GB line would squash a 10 MB model's bars to nothing
    scale = (max(biggest, cap) if cap_shown else biggest) or 1.0
    unit = _unit(scale)
    cap_line = cap if cap_shown else None
    pred_peak = ((peaks[0], "2px dotted black"),) if peaks else ()
    rows = [_bar("one device holds all", est.total, est.total_bytes, scale, unit, cap=cap_line, markers=pred_peak),
            _bar(f"per device ({est.devices})", est.per_device, est.per_device_bytes, scale, unit, cap=cap_line)]
    if meas_parts:
        rows.append(_bar("<b>measured here</b>", meas_parts, sum(meas_parts.values()), scale, unit, hatch=True,
                         cap=cap_line, markers=((peaks[1], "3px solid black"),)))
    legend = " ".join(f'<span style="color:{COLOURS[k]}">&#9632;</span> {k.replace("_", " ")} '
                      f'{est.per_device[k] / unit[0]:,.3g}' for k in est.per_device if est.total[k] > 0)
    chip = (f'<span style="border-left:2px dashed black">&nbsp;</span> chip memory {cap / GiB:,.0f} GiB'
            if cap_shown else f"chip memory {cap / GiB:,.0f} GiB (off this scale)")  # vendors' HBM "GB" is GiB
    peak_note = ""
    if peaks:
        peak_note = (f'<br>measured: hatched bar (fp32 step on this machine). Peak: predicted '
                     f'<span style="border-left:2px dotted black">&nbsp;</span>{peaks[0] / unit[0]:,.3g} {unit[1]}, '
                     f'measured <span style="border-left:3px solid black">&nbsp;</span>{peaks[1] / unit[0]:,.3g} '
                     f'{unit[1]} ({by["peak"].get("peak_method", "measured")})')
    return (
        "".join(rows) + f'<div style="font-size:85%">per device, {unit[1]}: {legend} &nbsp; {chip}{peak_note}</div>')


def _as_total(est):
    """The estimate seen as a single device holding everything (per_device := total) for the bar chart."""
    return type(est)(est.config, est.total, est.total, est.assumptions)


def memory_explorer(model: str = "llama-2-7b", chip: str = "NVIDIA H100 SXM") -> W.VBox:
    """Controls for model, precision, optimizer, batch, sequence, recomputation, ZeRO, DP/TP/PP and chip."""
    c = {
        "model": W.Dropdown(options=[*list_presets(), CUSTOM], value=model, description="model"),
        "hidden": W.BoundedIntText(value=64, min=1, max=65536, description="hidden"),
        "layers": W.BoundedIntText(value=2, min=1, max=1024, description="layers"),
        "heads": W.BoundedIntText(value=4, min=1, max=1024, description="heads"),
        "vocab": W.BoundedIntText(value=256, min=1, max=10**6, description="vocab"),
        "precision": W.Dropdown(options=list(PRECISION_BYTES), value="bf16", description="precision"),
        "mode": W.ToggleButtons(options=["train", "infer"], value="train", description="mode",
                                style={"button_width": "auto"}),
        "optimizer": W.Dropdown(options=list(OPTIMIZER_STATE_BYTES), value="adamw", description="optimizer"),
        "batch": W.BoundedIntText(value=1, min=1, max=10**5, description="batch"),
        "seq": W.BoundedIntText(value=1024, min=1, max=10**7, description="seq"),
        "recompute": W.ToggleButtons(options=list(RECOMPUTE_CHOICES), value="none", description="recompute",
                                     style={"button_width": "auto"}),
        "zero": W.IntSlider(value=0, min=0, max=3, description="ZeRO"),
        "dp": W.BoundedIntText(value=1, min=1, max=10**5, description="DP"),
        "tp": W.BoundedIntText(value=1, min=1, max=1024, description="TP"),
        "pp": W.BoundedIntText(value=1, min=1, max=1024, description="PP"),
        "chip": W.Dropdown(options=[ch.name for ch in hardware.list_chips()], value=chip, description="chip"),
    }
    err, verdict, bars, out, status = error_box(), W.HTML(), W.HTML(), W.Output(), W.HTML()
    button = run_button("Measure it")
    button.tooltip = "switch to the custom dims (fp32, one device) and train that TinyGPT one step here"
    state: dict = {"measured": None, "settings": None, "quiet": False}  # last measurement and its controls

    def values() -> dict:
        return {k: w.value for k, w in c.items()}

    def show_custom_fields() -> None:  # raw dims only when "custom" is chosen (not beside a preset)
        for k in CUSTOM_FIELDS:
            c[k].layout.display = None if c["model"].value == CUSTOM else "none"

    def update(_=None) -> None:
        show_custom_fields()
        if state["quiet"]:
            return
        try:
            view = memory_view(**values())
        except Exception as exc:
            show_error(err, exc, stale=(verdict, bars))
            return
        show_error(err, None)
        verdict.value = view["verdict"]
        current = state["settings"] == values()
        bars.value = html_bars(view, state["measured"] if current else None)
        if state["measured"] is not None and not current:
            out.clear_output()
            status.value = "controls changed: the measurement is hidden until they match it (or measure again)"

    def switch(settings: dict) -> None:
        state["quiet"] = True  # one redraw at the end, not one per control
        try:
            for k, v in settings.items():
                c[k].value = v
        finally:
            state["quiet"] = False

    def work() -> str:
        settings = measured_settings(values())
        memory_view(**settings)  # bad custom dims fail here, before anything moves
        switch(settings)
        state["measured"], state["settings"] = None, None
        update()
        rows = measure_view(hidden=settings["hidden"], layers=settings["layers"], heads=settings["heads"],
                            vocab=settings["vocab"], seq=settings["seq"], batch=settings["batch"],
                            recompute=settings["recompute"], optimizer=settings["optimizer"])
        state["measured"], state["settings"] = rows, values()
        update()
        show_figure(out, draw(memory_view(**settings), rows),
                    alt="Stacked bars of memory per component, predicted beside measured, with both peaks marked")
        peak = rows[-1]
        return (f"measured: custom dims {settings['hidden']}x{settings['layers']}, fp32, one training step here; "
                f"peak {peak['measured'] / 1e6:,.3g} MB = {peak['ratio']:.2f} x predicted")

    for w in c.values():
        w.observe(update, names="value")
    button.on_click(lambda _: guarded_run(button, status, err, "measuring...", work))
    update()
    left = W.VBox([c[k] for k in ("model", "hidden", "layers", "heads", "vocab", "precision", "optimizer")])
    right = W.VBox([c[k] for k in ("batch", "seq", "zero", "dp", "tp", "pp", "chip")])
    return W.VBox([W.HBox([left, right]), c["mode"], c["recompute"], err, verdict, bars,
                   W.HBox([button, status]), out])


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    value = 6_738_415_616 * (2 + 2 + 8 + 4) / 1e9
    return value, ("bf16 weights 2 B + bf16 gradients 2 B + two fp32 Adam moments 8 B + fp32 master copy 4 B = "
                   f"16 B per parameter; x 6.738e9 = {value:.1f} GB.")


def _worked_2() -> tuple[float, str]:
    value = 2 * 80 * 8 * 128 * 4096 * 8 * 2 / 1e9
    return value, f"2 (K and V) x 80 layers x 8 KV heads x 128 x 4096 tokens x 8 sequences x 2 bytes = {value:.2f} GB."


def _worked_3() -> tuple[float, str]:
    train = MemoryConfig(model=resolve_model("llama-2-70b"), batch=1, seq=4096, recompute="full")
    n = devices_needed(train, hardware.get_chip("H100 SXM").memory_bytes, zero=3)
    assert n is not None, "some ZeRO-3 split of H100s holds Llama-2-70B"
    act = estimate(train).total["activations"]
    return float(n), (f"ZeRO-3 shards the 16 B/parameter of model state over N GPUs, but each GPU keeps its own "
                      f"activations ({act / 1e9:.1f} GB with full recomputation). The smallest N with "
                      f"activations + 16 B x 69e9 / N <= 80 GB is {n}.")


def _larger_at_serving() -> str:
    total = estimate_memory("llama-3-8b", mode="infer", batch=16, seq=8192).total
    return "kv cache" if total["kv_cache"] > total["weights"] else "weights"


def _solution_4() -> str:
    weights = 8.03e9 * 2 / 1e9
    cache = 2 * 32 * 8 * 128 * 8192 * 16 * 2 / 1e9
    return (f"weights: 8.03e9 parameters x 2 B = {weights:.1f} GB; KV cache: 2 (K and V) x 32 layers x 8 KV heads x "
            f"128 x 8192 tokens x 16 sequences x 2 B = {cache:.1f} GB, so the "
            f"{'kv cache' if cache > weights else 'weights'} is larger.")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}


def _text_of(worked: Callable[[], tuple[float, str]]) -> Callable[[], str]:
    return lambda: worked()[1]


SOLUTIONS = {**{n: _text_of(f) for n, f in WORKED.items()}, 4: _solution_4}


def _model_state_7b() -> float:
    total = estimate_memory("llama-2-7b", precision="bf16", optimizer="adamw").total
    return sum(total[k] for k in ("weights", "gradients", "optimizer", "master_weights")) / GB


def _kv_cache_70b() -> float:
    return estimate_memory("llama-2-70b", mode="infer", batch=8, seq=4096).total["kv_cache"] / GB


def _gpus_for_70b() -> int:
    train = MemoryConfig(model=resolve_model("llama-2-70b"), batch=1, seq=4096, recompute="full")
    n = devices_needed(train, hardware.get_chip("H100 SXM").memory_bytes, zero=3)
    assert n is not None, "some ZeRO-3 split of H100s holds Llama-2-70B"
    return n


# The graded questions (aihw.grading): the lab's cells call ASSIGNMENT.check("q1", answer1), which compares with
# the calculators above; scripts/grade.py scores executed notebooks against the same calculators.
ASSIGNMENT = Assignment("memory_lab", (
    Question("q1", "answer1", _model_state_7b, SOLUTIONS[1], unit="GB",
             hint="list what mixed-precision AdamW keeps per parameter, and the bytes of each."),
    Question("q2", "answer2", _kv_cache_70b, SOLUTIONS[2], unit="GB",
             hint="the cache holds a key and a value vector per layer, KV head, token and sequence."),
    Question("q3", "answer3", _gpus_for_70b, SOLUTIONS[3], rel_tol=0, unit="GPUs",
             hint="ZeRO-3 shards model state, but what does each GPU still hold in full?"),
    Question("q4", "answer4", _larger_at_serving, _solution_4, choices=("weights", "kv cache"),
             hint="compute both: weights are 2 B per parameter; the cache grows with batch x context."),
))
