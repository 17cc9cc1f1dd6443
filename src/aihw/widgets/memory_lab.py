"""Widget of the lab "Memory math": size a model live, then measure the small model on this machine.

The live view is HTML (stacked bars, verdict) so it redraws in about a millisecond; the matplotlib
figures (:func:`draw`, the measurement panel) are for the static book and for the "Measure it" result.

The builder :func:`memory_explorer` returns the widget. The work is in plain functions tests call directly:
:func:`memory_view` (estimate, verdict and chips needed for a set of control values) and
:func:`measure_view` (a real training step of the custom-sized TinyGPT, behind the "Measure it" button).
"""

from __future__ import annotations

import html

import ipywidgets as W
import matplotlib.pyplot as plt

from aihw import hardware
from aihw.memory import GB, OPTIMIZER_STATE_BYTES, PRECISION_BYTES, RECOMPUTE, GiB, MemoryConfig, estimate
from aihw.memory_fit import devices_needed
from aihw.model_presets import ModelShape, list_presets
from aihw.plots.memory import COLOURS, plot_breakdown, plot_predicted_vs_measured
from aihw.widgets._common import error_box, show_error, show_figure

CUSTOM = "custom (raw dims)"
MEASURE_LIMITS = {"hidden": 512, "layers": 8, "seq": 512, "batch": 32, "vocab": 4096}  # keeps a run < ~10 s


def memory_view(*, model: str = "llama-2-7b", hidden: int = 64, layers: int = 2, heads: int = 4, vocab: int = 256,
                precision: str = "bf16", mode: str = "train", optimizer: str = "adamw", batch: int = 1,
                seq: int = 1024, recompute: str = "none", zero: int = 0, dp: int = 1, tp: int = 1, pp: int = 1,
                chip: str = "NVIDIA H100 SXM") -> dict:
    """Estimate for the control values; verdict against ``chip`` and the chips needed. Raises ValueError."""
    shape = (ModelShape("custom", hidden, layers, heads, vocab=vocab, max_seq=seq) if model == CUSTOM
             else model)
    cfg = MemoryConfig(model=shape, precision=precision, mode=mode, optimizer=optimizer, batch=batch, seq=seq,
                       recompute=recompute, zero=zero, dp=dp, tp=tp, pp=pp)
    est = estimate(cfg)
    cap = float(hardware.get_chip(chip).memory_bytes)
    fits = est.per_device_bytes <= cap
    needed = devices_needed(cfg, cap)
    verdict = (f"<b style='color:{'#1b7f3b' if fits else '#b00020'}'>{'fits' if fits else 'does not fit'}</b> "
               f"on one {html.escape(chip)} ({cap / GB:,.0f} GB): {est.per_device_bytes / GB:,.1f} GB "
               f"({est.per_device_bytes / GiB:,.1f} GiB) per device, {est.devices} device(s). "
               + (f"Fewest chips that hold it ({'ZeRO stage ' + str(zero) if mode == 'train' else 'TP then PP'}"
                  f"): <b>{needed}</b>." if needed else "No split of this kind holds it."))
    return {"estimate": est, "capacity_bytes": cap, "fits": fits, "chips_needed": needed, "verdict": verdict}


def measure_view(*, hidden: int, layers: int, heads: int, vocab: int, seq: int, batch: int,
                 recompute: str = "none", optimizer: str = "adamw") -> list[dict]:
    """Run the TinyGPT with these dims on this machine (fp32) and return predicted-vs-measured rows."""
    from aihw.memory_measure import MeasureConfig, compare  # torch loads only when a measurement is asked for
    from aihw.tinygpt import TinyGPTConfig

    for name, limit in MEASURE_LIMITS.items():
        value = {"hidden": hidden, "layers": layers, "seq": seq, "batch": batch, "vocab": vocab}[name]
        if value > limit:
            raise ValueError(f"{name}={value} is too large to measure here (at most {limit}); use custom dims")
    if optimizer == "adam8bit":
        raise ValueError("the measurement uses torch optimizers: sgd, sgd_momentum, adam, adamw (not adam8bit)")
    model = TinyGPTConfig(vocab=vocab, width=hidden, depth=layers, heads=heads, seq_len=seq, recompute=recompute)
    return compare(MeasureConfig(model=model, batch=batch, optimizer=optimizer))


def draw(view: dict, measured: list[dict] | None = None):
    """Stacked bars (single-device total and per device) + predicted-vs-measured panel when measured."""
    fig, axes = plt.subplots(1, 2 if measured else 1, figsize=(11 if measured else 7, 4.2), squeeze=False)
    est = view["estimate"]
    plot_breakdown({"one device holds all": _as_total(est), f"per device ({est.devices} devices)": est},
                   ax=axes[0][0], capacity_bytes=view["capacity_bytes"])
    axes[0][0].set_title(est.config.model.name if est.config.model else "", fontsize=10)
    if measured:
        plot_predicted_vs_measured(measured, ax=axes[0][1], title="custom model on this machine (fp32)")
    return fig


def html_bars(view: dict) -> str:
    """The live view: two stacked horizontal bars (one device holding all, per device) and the chip's memory,
    drawn as HTML so a control change redraws in well under a millisecond (a matplotlib redraw takes ~0.2 s)."""
    est, cap = view["estimate"], view["capacity_bytes"]
    scale = max(est.total_bytes, cap) or 1.0
    rows = []
    for label, parts, total in (("one device holds all", est.total, est.total_bytes),
                                (f"per device ({est.devices})", est.per_device, est.per_device_bytes)):
        segs = "".join(
            f'<div title="{k}: {v / GB:,.2f} GB" style="width:{100 * v / scale:.3f}%;background:{COLOURS[k]};'
            f'height:100%"></div>' for k, v in parts.items() if v > 0)
        marker = (f'<div style="position:absolute;left:{100 * cap / scale:.3f}%;top:-3px;bottom:-3px;'
                  f'border-left:2px dashed black"></div>')
        rows.append(f'<div style="display:flex;align-items:center;margin:4px 0"><div style="width:190px">{label}'
                    f'</div><div style="position:relative;flex:1;height:22px;display:flex;background:#eee">'
                    f'{segs}{marker}</div><div style="width:110px;text-align:right">{total / GB:,.1f} GB</div></div>')
    legend = " ".join(f'<span style="color:{COLOURS[k]}">&#9632;</span> {k.replace("_", " ")} '
                      f'{est.per_device[k] / GB:,.2f}' for k in est.per_device if est.total[k] > 0)
    return ("".join(rows) + f'<div style="font-size:85%">per device, GB: {legend} &nbsp; '
            f'<span style="border-left:2px dashed black">&nbsp;</span> chip memory {cap / GB:,.0f} GB</div>')


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
        "mode": W.ToggleButtons(options=["train", "infer"], value="train", description="mode"),
        "optimizer": W.Dropdown(options=list(OPTIMIZER_STATE_BYTES), value="adamw", description="optimizer"),
        "batch": W.BoundedIntText(value=1, min=1, max=10**5, description="batch"),
        "seq": W.BoundedIntText(value=1024, min=1, max=10**7, description="seq"),
        "recompute": W.ToggleButtons(options=list(RECOMPUTE), value="none", description="recompute"),
        "zero": W.IntSlider(value=0, min=0, max=3, description="ZeRO"),
        "dp": W.BoundedIntText(value=1, min=1, max=10**5, description="DP"),
        "tp": W.BoundedIntText(value=1, min=1, max=1024, description="TP"),
        "pp": W.BoundedIntText(value=1, min=1, max=1024, description="PP"),
        "chip": W.Dropdown(options=[ch.name for ch in hardware.list_chips()], value=chip, description="chip"),
    }
    err, verdict, bars, out, status = error_box(), W.HTML(), W.HTML(), W.Output(), W.HTML()
    button = W.Button(description="Measure it", tooltip="train the custom-dims TinyGPT one step here (fp32)")
    state: dict = {"measured": None}  # the last measurement, kept for redraws

    def values() -> dict:
        return {k: w.value for k, w in c.items()}

    def update(_=None) -> None:
        try:
            view = memory_view(**values())
        except ValueError as exc:
            show_error(err, exc)
            return
        show_error(err, None)
        verdict.value = view["verdict"]
        bars.value = html_bars(view)

    def show_measurement() -> None:
        rows = state["measured"]
        show_figure(out, plot_predicted_vs_measured(rows, title="custom model on this machine (fp32)"))

    def run_measure(_=None) -> None:
        v = values()
        status.value = "measuring..."
        try:
            state["measured"] = measure_view(hidden=v["hidden"], layers=v["layers"], heads=v["heads"],
                                             vocab=v["vocab"], seq=v["seq"], batch=v["batch"],
                                             recompute=v["recompute"], optimizer=v["optimizer"])
        except ValueError as exc:
            status.value = ""
            show_error(err, exc)
            return
        status.value = "measured: custom dims, fp32, one training step on this machine"
        show_measurement()

    for w in c.values():
        w.observe(update, names="value")
    button.on_click(run_measure)
    update()
    left = W.VBox([c[k] for k in ("model", "hidden", "layers", "heads", "vocab", "precision", "optimizer")])
    right = W.VBox([c[k] for k in ("batch", "seq", "zero", "dp", "tp", "pp", "chip")])
    return W.VBox([W.HBox([left, right]), c["mode"], c["recompute"], err, verdict, bars,
                   W.HBox([button, status]), out])
